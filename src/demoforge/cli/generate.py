"""`demoforge generate`: execute problems into success and failure datasets."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import typer

from demoforge.errors import DemoforgeError
from demoforge.cli.failures import fail
from demoforge.cli.ranges import MAX_ENVS, MAX_EPISODES, MAX_SEED, MAX_WORKERS


class _Display:
    """Progress as a rich bar on a terminal, as plain lines otherwise."""

    def __init__(self, total: int, tty: bool):
        self.total, self.tty = total, tty
        self.done = self.ok = 0
        self.start = time.perf_counter()
        self.progress = None
        if tty:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.progress = Progress(TextColumn("[bold]generate"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("{task.fields[stats]}"), TimeRemainingColumn())
            self.task = self.progress.add_task("episodes", total=total, stats="")
            self.progress.start()

    def stats(self) -> str:
        minutes = max(time.perf_counter() - self.start, 1e-9) / 60
        rate = self.done / minutes
        eta = (self.total - self.done) / rate * 60 if rate > 0 else float("nan")
        yield_ = 100.0 * self.ok / self.done if self.done else 0.0
        return f"success {yield_:.1f}%  {rate:.1f} episodes/min  eta {eta:.0f} s"

    def __call__(self, event) -> None:  # a demoforge.stage.ProgressEvent
        if event.kind == "episode":
            self.done += 1
            self.ok += bool(event.success)
            if self.progress is not None:
                self.progress.update(self.task, completed=self.done, stats=self.stats())
            else:
                status = "success" if event.success else f"failure ({event.failure})"
                typer.echo(f"[{self.done}/{self.total}] {event.item}: {status}; {self.stats()}")
        elif event.kind == "item" and self.progress is None:
            typer.echo(f"problem {event.item}: done")

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def generate(
    inputs: list[Path] = typer.Argument(..., metavar="PROBLEMS_OR_ENV_PACKAGES...",
                                        help="PDDL problem files (with NAME.scene.json beside each) or environment "
                                             "package folders."),
    envs: int = typer.Option(1, "--envs", min=1, max=MAX_ENVS, help="Environments stepped together per worker."),
    episodes_per_problem: int = typer.Option(..., "--episodes-per-problem", min=1, max=MAX_EPISODES,
                                             help="Episodes per problem."),
    workers: str = typer.Option("1", "--workers", help="Worker processes, or 'auto' (one per core, at most one "
                                                        "per problem)."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED,
                             help="Run seed; the output does not depend on --envs or --workers."),
    out: Path = typer.Option(..., "--out", help="Run folder: OUT/success, OUT/failure, OUT/summary.json. Rerun with "
                                                "the same arguments to resume an interrupted run."),
    domain: str = typer.Option("blocks", "--domain", help="Library domain name or domain PDDL file (PDDL inputs)."),
    max_retries: int = typer.Option(3, "--max-retries", min=0, max=100,
                                    help="Attempts of a failed step beyond the first."),
    max_replans: int = typer.Option(2, "--max-replans", min=0, max=100, help="Re-plans per episode."),
    randomization: Path | None = typer.Option(None, "--randomization", help="Physics randomization spec (YAML, "
                                                                               "see examples/randomize/physics.yaml)."),
    randomize: list[str] = typer.Option([], "--randomize", help="FIELD=VALUE override of the spec (YAML value), "
                                                                "e.g. --randomize mass_scale=[0.9,1.1]; repeatable."),
    record_videos: str | None = typer.Option(None, "--record-videos", help="Render these cameras while generating, "
                                             "comma-separated (e.g. front,wrist); frames come from the recorded states."),
    look: str = typer.Option("plain", "--look", help="Look of --record-videos: a shipped look name or a YAML file."),
    motion_profile: str = typer.Option("medium", "--motion-profile", help="Expert arm speed: slow, medium or fast "
                                       "(fractions of the robot card's joint velocity, acceleration and jerk limits)."),
    robot: str | None = typer.Option(None, "--robot", help="Arm of the PDDL problems' scenes: a built-in robot card "
                                     "(panda, ur5e_2f85) or a card YAML [default: panda]; an environment package "
                                     "has the arm it was built with."),
    control_law: str | None = typer.Option(None, "--control-law", help="How the arm is commanded and what "
                                           "raw_command holds: joint_position (joint targets) or cartesian_delta "
                                           "(TCP deltas per tick through differential IK) [default: the robot "
                                           "card's law]."),
    robot_start: bool = typer.Option(False, "--robot-start", help="PDDL inputs: each episode's arm starts at a pose "
                                     "drawn from the default windows (README 'Robot start') instead of home."),
    robot_start_spec: Path | None = typer.Option(None, "--robot-start-spec", help="YAML of robot start windows "
                                                 "(RobotStartParams fields); implies --robot-start."),
    play: bool = typer.Option(False, "--play", help="Play data: after the problem's goal, chain goals sampled from "
                              "the reached state (a random walk over every operator of the domain) in one episode "
                              "without resets."),
    play_goals: int | None = typer.Option(None, "--play-goals", min=1, max=100, help="Goals per --play episode, "
                                          "the problem's own first; each may take the episode time limit "
                                          "[default: 3]."),
) -> None:
    """Execute every problem's episodes: plan, run skills, verify each step, retry, re-plan, and record
    successes and failures (with their cause) as LeRobot v3 datasets."""
    from demoforge.execute import RunnerSettings, generate as run_generate

    if workers != "auto" and not (workers.isdigit() and 1 <= int(workers) <= MAX_WORKERS):
        typer.echo(f"error: --workers {workers!r} must be an integer in [1, {MAX_WORKERS}] or 'auto'", err=True)
        raise typer.Exit(2)
    try:
        from demoforge.randomize import RandomizationSpec, load_spec, spec_with_overrides

        spec = load_spec(randomization) if randomization is not None else None
        if randomize:
            spec = spec_with_overrides(spec or RandomizationSpec(), randomize, where="--randomize")
        settings = RunnerSettings(max_retries=max_retries, max_replans=max_replans, motion_profile=motion_profile)
        from demoforge.execute.shards import InlineVideo

        videos = None
        if record_videos:
            cams = tuple(c.strip() for c in record_videos.split(",") if c.strip())
            videos = InlineVideo(cameras=cams, look=look, seed=seed)
        if play_goals is not None and not play:
            raise DemoforgeError(f"--play-goals {play_goals}: goals are chained only with --play; add --play")
        options = {"goals": play_goals or 3} if play else {}
        if play:
            from demoforge.pipeline.play import generate_play as run_generate
        from demoforge.execute import load_problems
        from demoforge.randomize.robot_start import resolve_robot_start
        from demoforge.sim import resolve_robot

        card = resolve_robot(robot) if robot is not None else None
        starts = resolve_robot_start(robot_start, robot_start_spec)
        n_problems = len(load_problems([str(p) for p in inputs], domain=domain, robot=card, robot_start=starts))
        display = _Display(n_problems * episodes_per_problem, sys.stdout.isatty())
        try:
            summary = run_generate([str(p) for p in inputs], out, episodes_per_problem=episodes_per_problem,
                                   envs=envs, workers=workers if workers == "auto" else int(workers), seed=seed,
                                   settings=settings, domain=domain, progress=display, randomization=spec,
                                   record_videos=videos, robot=card, control_law=control_law,
                                   robot_start=starts, **options)
        finally:
            display.stop()
    except DemoforgeError as exc:
        raise fail(exc) from None
    elapsed = time.perf_counter() - display.start
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
