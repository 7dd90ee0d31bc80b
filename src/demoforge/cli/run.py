"""`demoforge run`: the whole pipeline in one command (see demoforge.pipeline)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import typer



class _Progress:
    """One line for the whole run: stage, problems done, episodes, success rate, ETA."""

    def __init__(self, total_episodes: int, total_problems: int, tty: bool):
        self.total, self.problems, self.tty = total_episodes, total_problems, tty
        self.stage, self.done, self.ok, self.items = "", 0, 0, 0
        self.start = time.perf_counter()

    def on_stage(self, stage: str) -> None:
        self.stage = stage
        self.start = time.perf_counter()

    def line(self) -> str:
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        rate = self.done / elapsed
        eta = f"{(self.total - self.done) / rate:.0f} s" if rate > 0 else "?"
        yield_ = 100.0 * self.ok / self.done if self.done else 0.0
        return (f"[{self.stage}] problems {self.items}/{self.problems}  episodes {self.done}/{self.total}  "
                f"success {yield_:.0f}%  eta {eta}")

    def __call__(self, event) -> None:  # a demoforge.stage.ProgressEvent of the execute stage
        if event.kind == "episode":
            self.done += 1
            self.ok += bool(event.success)
        elif event.kind == "item":
            self.items += 1
        if self.tty:
            sys.stderr.write("\r" + self.line().ljust(90))
            sys.stderr.flush()
            if self.items == self.problems:
                sys.stderr.write("\n")
        elif event.kind == "item":
            typer.echo(self.line(), err=True)


def run(
    experiment_id: str = typer.Option(None, "--experiment-id", help="Run name; the run folder is OUT_DIR/ID."),
    config: Path | None = typer.Option(None, "--config", help="Pipeline config YAML (keys: PipelineConfig fields); "
                                                              "flags override it."),
    out_dir: str | None = typer.Option(None, "--out-dir", help="Parent of run folders [default: runs]."),
    family: str | None = typer.Option(None, "--family", help="Task family [default: stack_three]."),
    problems: int | None = typer.Option(None, "--problems", help="Problems generated [default: 2]."),
    task_seed: int | None = typer.Option(None, "--task-seed", help="Task generator seed [default: 0]."),
    problem_file: list[str] = typer.Option([], "--problem-file", help="PDDL problem (with its .scene.json) used "
                                                                      "instead of generating; repeatable."),
    reset_states: int | None = typer.Option(None, "--reset-states", help="Reset states per env profile."),
    episodes_per_problem: int | None = typer.Option(None, "--episodes-per-problem", help="Episodes per problem."),
    envs: int | None = typer.Option(None, "--envs", help="Environments per worker slot."),
    workers: str | None = typer.Option(None, "--workers", help="Worker slots, or 'auto' (one per core)."),
    seed: int | None = typer.Option(None, "--seed", help="Seed of env packages, execution and look draws."),
    robot: str | None = typer.Option(None, "--robot", help="Arm of every scene: a built-in robot card (panda, "
                                                            "ur5e_2f85) or a card YAML [default: panda]."),
    robot_start: bool = typer.Option(False, "--robot-start", help="Each reset state's arm starts at a pose drawn "
                                     "from the default windows (README 'Robot start') instead of home."),
    robot_start_spec: Path | None = typer.Option(None, "--robot-start-spec", help="YAML of robot start windows "
                                                 "(RobotStartParams fields); implies --robot-start."),
    render_pass: list[str] = typer.Option([], "--render-pass", help="Look: plain, randomized:N or LOOK.yaml[:N]; "
                                                                    "repeatable; none = no rendering."),
    camera: list[str] = typer.Option([], "--camera", help="Camera to render; repeatable [default: front, wrist]."),
    bake_convention: str | None = typer.Option(None, "--bake", help="Bake the train split to this convention."),
    doctor_fail_on: str | None = typer.Option(None, "--doctor-fail-on", help="warning or error: exit 1 when the "
                                                                             "doctor finds this."),
    backend: str | None = typer.Option(None, "--backend", help="local (default) or ray."),
    ray_address: str | None = typer.Option(None, "--ray-address", help="Ray cluster address."),
    smoke_test: bool = typer.Option(False, "--smoke-test", help="One problem, two episodes, front camera."),
    play: bool = typer.Option(False, "--play", help="Chain goals in one scene without resets (long episodes)."),
    play_goals: int | None = typer.Option(None, "--play-goals", help="Goals per play episode [default: 3]."),
    resume: bool = typer.Option(False, "--resume", help="Skip finished stages; restart the first unfinished one."),
    skip_tasks: bool = typer.Option(False, "--skip-tasks"),
    skip_envs: bool = typer.Option(False, "--skip-envs"),
    skip_execute: bool = typer.Option(False, "--skip-execute"),
    skip_render: bool = typer.Option(False, "--skip-render"),
    skip_merge: bool = typer.Option(False, "--skip-merge"),
    skip_annotate: bool = typer.Option(False, "--skip-annotate"),
    skip_bake: bool = typer.Option(False, "--skip-bake"),
    skip_doctor: bool = typer.Option(False, "--skip-doctor"),
) -> None:
    """Tasks -> env packages -> execution -> render passes -> merge -> annotate -> bake -> doctor, resumable."""
    from demoforge.pipeline import resolve_config, run_pipeline

    skips = {"tasks": skip_tasks, "envs": skip_envs, "execute": skip_execute, "render": skip_render,
             "merge": skip_merge, "annotate": skip_annotate, "bake": skip_bake, "doctor": skip_doctor}
    flags = {"experiment_id": experiment_id, "out_dir": out_dir, "family": family, "problems": problems,
             "task_seed": task_seed, "problem_files": problem_file or None, "reset_states": reset_states,
             "episodes_per_problem": episodes_per_problem, "envs": envs, "workers": workers, "seed": seed,
             "robot": robot, "robot_start": _robot_start_flag(robot_start, robot_start_spec),
             "render_passes": render_pass or None, "cameras": camera or None, "bake_convention": bake_convention,
             "doctor_fail_on": doctor_fail_on, "backend": backend, "ray_address": ray_address,
             "smoke_test": smoke_test or None, "play": play or None, "play_goals": play_goals}
    cfg = resolve_config(config, flags)
    if any(skips.values()):
        import dataclasses

        cfg = dataclasses.replace(cfg, skip=tuple(sorted(set(cfg.skip) | {s for s, v in skips.items() if v})))
    display = _Progress(cfg.episodes_per_problem * _problem_count(cfg), _problem_count(cfg),
                        sys.stderr.isatty() and cfg.progress)
    result = run_pipeline(cfg, resume=resume, echo=typer.echo, progress=display, on_stage=display.on_stage)
    typer.echo(f"run folder: {result.run_dir}")
    typer.echo(f"dataset: {result.final}")
    if result.failures is not None:
        typer.echo(f"failures: {result.failures}")
    for stage in ("execute", "merge"):
        if stage in result.notes:
            typer.echo(f"{stage}: {result.notes[stage]}")
    typer.echo(result.doctor_summary)
    if result.doctor_failed:
        raise typer.Exit(1)


def _robot_start_flag(enabled: bool, spec: Path | None):
    """The config's `robot_start` from the flags: the spec's windows, the defaults (true) or not given."""
    from demoforge.randomize.robot_start import load_robot_start, params_to_dict

    if spec is not None:
        return params_to_dict(load_robot_start(spec))
    return True if enabled else None


def _problem_count(cfg) -> int:
    return len(cfg.problem_files) if cfg.problem_files else cfg.problems
