"""The local backend: a pool of worker slots (default one per core) over problems on this machine,
per-problem logs under RUN/logs/execute/, and progress events for the run's display.

Execution itself is `demoforge.execute.generate`: one work item per problem, each writing its
own shards, merged in problem order, so the bytes do not depend on the number of slots and
a killed run continues from its finished episodes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from demoforge.execute import GenerateSummary, generate
from demoforge.pipeline.config import PipelineConfig, robot_card, robot_start_params, run_domain
from demoforge.stage import ProgressEvent


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


def execute_local(config: PipelineConfig, inputs: list[str], out: Path,
                  progress: Callable[[ProgressEvent], None] | None = None, *, executor=None,
                  run_with: Callable | None = None) -> GenerateSummary:
    """Run every problem of `inputs` into `out` (a generate run folder) on local worker slots, or on
    `executor` (a `demoforge.stage` executor: the Ray backend passes its own). `run_with`: what runs
    generate's stage (None: `run_stage`; the pipelined schedule's runs the render's items with it)."""
    logs = ProblemLogs(config.run_dir / "logs" / "execute")

    def on_event(event: ProgressEvent) -> None:
        logs(event)
        if progress is not None:
            progress(event)

    schedule = {} if run_with is None else {"run_with": run_with}
    if config.execute.play:  # play data: the same stage with the play expert, on the same executor
        from demoforge.pipeline.play import generate_play

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
