"""`demoforge generate`: execute problems into success and failure datasets."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import typer

from demoforge.cli.options import stage_command
from demoforge.cli.progress import StepProgress
from demoforge.execute.config import ExecuteConfig


@stage_command(ExecuteConfig)
def generate(
    inputs: list[Path] = typer.Argument(..., metavar="PROBLEMS_OR_SCENE_PACKAGES...",
                                        help="PDDL problem files (with NAME.scene.json beside each) or environment "
                                             "package folders."),
    out: Path = typer.Option(..., "--out", help="Run folder: OUT/success, OUT/failure, OUT/summary.json. Rerun with "
                                                "the same arguments to resume an interrupted run."),
    domain: str = typer.Option("blocks", "--domain", help="Library domain name or domain PDDL file (PDDL inputs)."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress (a bar on a terminal, a line per episode "
                                                      "otherwise); the summary is still printed."),
    options: ExecuteConfig = None,
) -> None:
    """Execute every problem's episodes: plan, run skills, verify each step, retry, re-plan, and record
    successes and failures (with their cause) as LeRobot v3 datasets. Every option is also a key of
    `demoforge run` (its execute stage) under the same name."""
    from demoforge.execute import generate as run_generate
    from demoforge.execute import load_problems
    from demoforge.sim import resolve_robot

    o = options
    run = run_generate
    extra = {}
    if o.play:
        from demoforge.pipeline.play import generate_play as run

        extra = {"goals": o.goals()}
    card = resolve_robot(o.robot) if o.robot is not None else None
    starts = o.robot_start_params()
    load_problems([str(p) for p in inputs], domain=domain, robot=card, robot_start=starts)  # bad ones refused now
    start = time.perf_counter()
    with StepProgress("generate", quiet=quiet, outcomes=not sys.stderr.isatty()) as display:
        summary = run([str(p) for p in inputs], out, episodes_per_problem=o.episodes_per_problem, envs=o.envs,
                      workers=o.workers, seed=o.seed, settings=o.settings, domain=domain,
                      progress=None if quiet else display,
                      randomization=o.randomization_spec(), record_videos=o.inline_video(), robot=card,
                      control_law=o.control_law, robot_start=starts, problems_per_process=o.problems_per_process,
                      materials=o.materials(), **extra)
    elapsed = time.perf_counter() - start
    typer.echo(f"{summary.successes}/{summary.episodes} episodes succeeded "
               f"({100.0 * summary.successes / max(summary.episodes, 1):.1f}%) in {elapsed:.1f} s")
    typer.echo("per problem (success/attempted):")
    for name, t in summary.problems.items():
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(t.kinds.items()))
        typer.echo(f"  {name}: {t.success}/{t.success + t.failure}" + (f"  failures: {kinds}" if kinds else ""))
    kinds = summary.failure_kinds()
    typer.echo("failure causes by kind: " + (", ".join(f"{k} {n}" for k, n in kinds.items()) if kinds else "none"))
    for split, root in summary.roots.items():
        typer.echo(f"{split}: {root if root is not None else '(no episodes)'}")
