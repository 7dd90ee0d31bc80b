"""`demoforge scenes ...` commands: build and check scene packages. `demoforge env ...` is the
same commands under their old name (hidden, deprecated: one note on stderr, then the same)."""

import dataclasses
from pathlib import Path

import typer

from demoforge.cli.options import stage_command
from demoforge.cli.ranges import finite
from demoforge.randomize.robot_start import RobotStartError, check_robot_start
from demoforge.scenes import build_scene_package, load_scene_package, open_profile, restore_reset
from demoforge.scenes.config import ScenesConfig
from demoforge.sim import resolve_robot
from demoforge.symbolic import abstract, disagreement

app = typer.Typer(no_args_is_help=True, add_completion=False)
# `demoforge env ...`: the commands' old name, from before "env" came to mean only the environments
# stepped together (--envs, the gymnasium env); kept so scripts keep working.
legacy_app = typer.Typer(no_args_is_help=True, add_completion=False)
LEGACY_NOTE = "note: `demoforge env` is deprecated; use `demoforge scenes` (the same commands)"


@app.callback()
def main() -> None:
    """Scene packages: scene profiles and reset states of each problem."""


@legacy_app.callback()
def legacy_main() -> None:
    """Deprecated name of `demoforge scenes`."""
    typer.echo(LEGACY_NOTE, err=True)


@stage_command(ScenesConfig)
def build(
    problems: list[Path] = typer.Argument(..., help="Problem PDDL files, each with NAME.scene.json beside it."),
    out: Path = typer.Option(..., "--out", help="Package folder to create (must not exist)."),
    domain: str = typer.Option("blocks", "--domain", help="Library domain name or a domain PDDL file."),
    p_closed: float | None = typer.Option(None, "--p-closed", callback=finite(0.0, 1.0),
                                          help="With --robot-start: probability in [0, 1] the gripper starts closed "
                                               "[default: 0.5, or the spec's]."),
    options: ScenesConfig = None,
) -> None:
    """Write the scene profiles and reset states of PROBLEMS to a scene package. Every option
    but --p-closed is also a key of `demoforge run` (its scenes stage) under the same name."""

    starts = options.robot_start
    if p_closed is not None:
        if starts is None:
            raise RobotStartError(f"--p-closed {p_closed}: the gripper's start is drawn only with a random robot "
                                  "start; add --robot-start (or --robot-start-spec FILE)")
    params = options.robot_start_params()
    if params is not None and p_closed is not None:
        params = check_robot_start(dataclasses.replace(params, p_closed=p_closed))
    manifest = build_scene_package(
        problems, reset_states=options.reset_states, profiles=options.profiles, seed=options.seed, out=out,
        domain=domain, robot_start=params, progress=lambda line: typer.echo(line),
        robot=resolve_robot(options.robot) if options.robot is not None else None,
    )
    n_profiles = sum(len(p.profiles) for p in manifest.problems)
    findings = sum(len(q.findings) for p in manifest.problems for q in p.profiles)
    typer.echo(f"wrote {out}: {len(manifest.problems)} problem(s), {n_profiles} profile(s), "
               f"{n_profiles * manifest.reset_states} reset state(s), {findings} lint finding(s)")


def check(package: Path = typer.Argument(..., help="Scene package folder.")) -> None:
    """Verify a package: checksums, model rebuilds, and every reset state abstracting to its init.

    Exit 0 when all hold, 1 when a reset state's abstraction differs, 2 when the package is unreadable."""

    pkg = load_scene_package(package)
    bad = 0
    for problem in pkg.problems:
        init = frozenset(problem.task.init)
        for k, profile in enumerate(problem.profiles):
            scene, binding = open_profile(problem, k)
            for i in range(len(profile.states)):
                restore_reset(scene, profile, i)
                atoms = abstract(scene.model, scene.data, binding)
                if atoms != init:
                    bad += 1
                    typer.echo(f"{problem.entry.name} profile {k} state {i}: {disagreement(atoms, init)}")
    total = sum(len(p.states) for q in pkg.problems for p in q.profiles)
    typer.echo(f"{package}: {len(pkg.problems)} problem(s), {total} reset state(s), {bad} differ from their init")
    if bad:
        raise typer.Exit(1)


for _group in (app, legacy_app):
    _group.command("build")(build)
    _group.command("check")(check)
