"""Where a run's work items execute, and its execute stage.

    with executor_for("ray", "HEAD:PORT") as executor:          # None under "local"
        summary = execute_problems(config, inputs, RUN / "execute", executor=executor)

The executors are the stage runner's own pair (`demoforge.stage`): `LocalExecutor`, sized by each
stage to its work items and the run's workers, and `RayExecutor`. `executor_for` picks one for a
stage of a run from `backend` and `ray_address`; execute, render, annotate and bake take it, so every
stage with work items runs on the backend the run names, each stage object carrying every setting.

The execute stage is `execute.generate`, or play's (`pipeline.play`: the same stage with another
expert) when the run asks for play data, on that executor: one work item per problem, each writing
its own shards, merged in problem order, so the bytes depend neither on the backend nor on the
number of slots, and a killed run continues from its finished episodes. Each problem's episodes
are logged to RUN/logs/execute/<problem>.log.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from demoforge.execute import GenerateSummary, generate
from demoforge.pipeline.config import BACKENDS, PipelineConfig, PipelineError, robot_card, robot_start_params, run_domain
from demoforge.pipeline.play import generate_play
from demoforge.stage import ProgressEvent


@contextlib.contextmanager
def executor_for(backend: str, ray_address: str | None = None) -> Iterator[object | None]:
    """The executor of one stage of a run under `backend`: None for "local" (the stage makes its
    own `LocalExecutor`, sized to its work items), a `RayExecutor` on `ray_address` (None: a Ray of
    its own on this machine) for "ray", shut down on exit."""
    if backend not in BACKENDS:
        raise PipelineError(f"unknown backend {backend!r}; backends: {', '.join(sorted(BACKENDS))}")
    if backend == "local":
        yield None
        return
    try:
        import ray  # noqa: F401  (Ray is optional: imported when asked for)
    except ImportError:
        raise PipelineError("backend 'ray' needs Ray: pip install 'demoforge[ray]'") from None
    from demoforge.stage.ray import RayExecutor  # lazy: Ray's import costs seconds

    with RayExecutor(ray_address) as executor:
        yield executor


class ProblemLogs:
    """Appends each finished episode to RUN/logs/execute/<problem>.log."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def __call__(self, event: ProgressEvent) -> None:
        problem = event.item
        if event.kind == "episode":
            line = "success" if event.success else f"failure ({event.failure})"
        elif event.kind == "item":
            line = "problem done"
        else:
            return
        with open(self.folder / f"{problem}.log", "a", encoding="utf-8") as f:
            f.write(line + "\n")


def execute_problems(config: PipelineConfig, inputs: list[str], out: Path,
                     progress: Callable[[ProgressEvent], None] | None = None, *, executor=None,
                     run_with: Callable | None = None) -> GenerateSummary:
    """Run every problem of `inputs` into `out` (a generate run folder) on `executor` (from
    `executor_for`; None: local slots). `run_with`: what runs generate's stage (None: `run_stage`;
    the pipelined schedule's runs the render's items with it)."""
    logs = ProblemLogs(config.run_dir / "logs" / "execute")

    def on_event(event: ProgressEvent) -> None:
        logs(event)
        if progress is not None:
            progress(event)

    if executor is not None:  # a Ray task's folder is the same path on every node only when absolute
        out = Path(out).resolve()
    schedule = {} if run_with is None else {"run_with": run_with}
    if config.execute.play:  # play data: the same stage with the play expert, on the same executor
        return generate_play(inputs, out, goals=config.execute.goals(), workers=config.workers, progress=on_event,
                             executor=executor, **schedule, **generate_options(config, inputs))
    return generate(inputs, out, workers=config.workers, progress=on_event, executor=executor, **schedule,
                    **generate_options(config, inputs))


def generate_options(config: PipelineConfig, inputs: list[str]) -> dict:
    """`execute.generate`'s keyword arguments from the run's execute options (all but the
    workers, progress and executor)."""
    c = config.execute
    return {"episodes_per_problem": c.episodes_per_problem, "envs": c.envs, "seed": c.seed,
            "problems_per_process": c.problems_per_process,
            "settings": c.settings, "randomization": c.randomization_spec(),
            "record_videos": c.inline_video(), "robot": robot_card(config), "control_law": c.control_law,
            "robot_start": robot_start_params(config, inputs), "materials": c.materials(),
            "domain": run_domain(config)}
