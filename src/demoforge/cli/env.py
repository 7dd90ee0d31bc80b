"""`demoforge env ...` commands: build environment packages."""

from pathlib import Path

import typer

from demoforge.cli.ranges import MAX_SEED, finite

app = typer.Typer(no_args_is_help=True, add_completion=False)


@app.callback()
def main() -> None:
    """Environment packages: scenes, profiles and reset states."""


@app.command("build")
def build(
    problems: list[Path] = typer.Argument(..., help="Problem PDDL files, each with NAME.scene.json beside it."),
    reset_states: int = typer.Option(..., "--reset-states", min=1, max=100_000,
                                     help="Reset states sampled per scene profile."),
    profiles: int = typer.Option(8, "--profiles", min=1, max=10_000, help="Scene profiles baked per problem."),
    seed: int = typer.Option(..., "--seed", min=0, max=MAX_SEED, help="Package seed; same seed and inputs give identical packages."),
    out: Path = typer.Option(..., "--out", help="Package folder to create (must not exist)."),
    domain: str = typer.Option("blocks", "--domain", help="Library domain name or a domain PDDL file."),
    robot_start: bool = typer.Option(False, "--robot-start/--home", help="A random robot start per reset state "
                                     "(default windows, see README 'Robot start') or home."),
    robot_start_spec: Path | None = typer.Option(None, "--robot-start-spec", help="YAML of robot start windows "
                                                 "(RobotStartParams fields); implies --robot-start."),
    p_closed: float | None = typer.Option(None, "--p-closed", callback=finite(0.0, 1.0),
                                          help="With --robot-start: probability in [0, 1] the gripper starts closed "
                                               "[default: 0.5, or the spec's]."),
    robot: str | None = typer.Option(None, "--robot", help="Arm of every scene: a built-in robot card (panda, "
                                                            "ur5e_2f85) or a card YAML [default: panda]."),
) -> None:
    """Write the scene profiles and reset states of PROBLEMS to an environment package."""
    from demoforge.envs import build_env_package
    from demoforge.randomize.robot_start import resolve_robot_start
    from demoforge.sim import resolve_robot

    if p_closed is not None and not 0.0 <= p_closed <= 1.0:
        typer.echo(f"error: --p-closed {p_closed} must be in [0, 1]", err=True)
        raise typer.Exit(2)
    manifest = build_env_package(
        problems, reset_states=reset_states, profiles=profiles, seed=seed, out=out, domain=domain,
        robot_start=resolve_robot_start(robot_start, robot_start_spec, p_closed=p_closed),
        progress=lambda line: typer.echo(line), robot=resolve_robot(robot) if robot is not None else None,
    )
    n_profiles = sum(len(p.profiles) for p in manifest.problems)
    findings = sum(len(q.findings) for p in manifest.problems for q in p.profiles)
    typer.echo(f"wrote {out}: {len(manifest.problems)} problem(s), {n_profiles} profile(s), "
               f"{n_profiles * manifest.reset_states} reset state(s), {findings} lint finding(s)")


@app.command("check")
def check(package: Path = typer.Argument(..., help="Environment package folder.")) -> None:
    """Verify a package: checksums, model rebuilds, and every reset state abstracting to its init.

    Exit 0 when all hold, 1 when a reset state's abstraction differs, 2 when the package is unreadable."""
    from demoforge.envs import load_env_package, open_profile, restore_reset
    from demoforge.symbolic import abstract, disagreement

    pkg = load_env_package(package)
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
