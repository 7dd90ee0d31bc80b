"""`run_pipeline`: the stages in order, with resume markers, a saved config and a summary.

    result = run_pipeline(resolve_config("examples/pipeline/demo.yaml", {"experiment_id": "x"}))
    result.final, result.doctor_summary, result.seconds

A new run refuses an existing run folder; `resume=True` requires the saved config to
match in every output-shaping field, skips stages with a `.done` marker, and restarts the
first unfinished one after cleaning its partial outputs (see `stages.CONTINUES`). A run folder
written before the scenes stage was renamed (RUN/envs/, .pipeline_state/envs.done) is refused:
its episodes record the package's path, so a continued run would mix two.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from demoforge.pipeline import state
from demoforge.pipeline.config import (
    OLD_STAGE_NAMES,
    STAGES,
    PipelineConfig,
    PipelineError,
    dump_config,
    output_fields,
    saved_output_fields,
)
from demoforge.pipeline.stages import CONTINUES, STAGE_FUNCTIONS, STAGE_OUTPUTS, RunContext, final_dataset

CONFIG_FILE = "config.yaml"


@dataclass(frozen=True)
class PipelineResult:
    """What a pipeline run did."""

    run_dir: Path  # RUN
    final: Path  # the training dataset (baked, or the merged train split)
    failures: Path | None  # the merged failure split, if any episode failed
    ran: tuple[str, ...]  # stages run now
    skipped: tuple[str, ...]  # stages not run now: --skip, or done before a --resume
    seconds: dict[str, float]  # wall time per stage run now [s]
    notes: dict[str, str]  # per stage, a line or two for the summary
    doctor_failed: bool  # a doctor finding reached doctor_fail_on

    @property
    def doctor_summary(self) -> str:
        return self.notes.get("doctor", "doctor: not run")


def _prepare(config: PipelineConfig, resume: bool) -> Path:
    run_dir = config.run_dir
    saved = run_dir / CONFIG_FILE
    if saved.is_file():
        if not resume:
            raise PipelineError(f"{run_dir}: holds a run already; pass --resume to continue it, or choose another "
                                "--experiment-id")
        _refuse_old_stage_names(run_dir)
        old_fields = saved_output_fields(saved)
        diff = sorted(k for k, v in output_fields(config).items() if old_fields.get(k) != v)
        if diff:
            raise PipelineError(f"{run_dir}: was run with other settings ({', '.join(diff)}); resume with the saved "
                                f"config {saved}, or choose another --experiment-id")
    elif run_dir.exists() and any(run_dir.iterdir()):
        raise PipelineError(f"{run_dir}: exists and is not a pipeline run; choose another --experiment-id or --out-dir")
    run_dir.mkdir(parents=True, exist_ok=True)
    saved.write_text(dump_config(config), encoding="utf-8")
    return run_dir


def _refuse_old_stage_names(run_dir: Path) -> None:
    """A run written under a stage's old name (RUN/envs/) cannot be continued: its finished stage's
    output sits where this version does not look, and its episodes name the old folder."""
    for old, new in OLD_STAGE_NAMES.items():
        found = [rel for rel in (f"{old}/", f"{state.STATE_DIR}/{old}.done") if (run_dir / rel).exists()]
        if found:
            raise PipelineError(f"{run_dir}: was written by an older demoforge, whose {new} stage was named {old} "
                                f"({', '.join(found)}); it cannot be resumed: rerun it with another --experiment-id "
                                "(its finished datasets stay usable where they are)")


def run_pipeline(config: PipelineConfig, *, resume: bool = False, echo: Callable[[str], None] = print,
                 progress: Callable | None = None,
                 on_stage: Callable[[str], None] | None = None) -> PipelineResult:
    """Run the configured stages into `config.run_dir` (see the module docstring)."""
    from demoforge.execute.pool import refuse_in_worker_start_up

    refuse_in_worker_start_up("run_pipeline")
    run_dir = _prepare(config, resume)
    ctx = RunContext(config, run_dir, echo, progress)
    ran, skipped, seconds = [], [], {}
    doctor_failed = False
    for stage in STAGES:
        if not config.runs(stage):
            skipped.append(stage)
            continue
        if state.is_done(run_dir, stage):
            if resume:
                skipped.append(stage)
                echo(f"{stage}: done before, skipped")
                continue
            raise PipelineError(f"{run_dir}: stage {stage} finished in an earlier run; pass --resume")
        if stage not in CONTINUES:
            removed = state.clean_outputs(run_dir, STAGE_OUTPUTS[stage])
            if removed:
                echo(f"{stage}: removed partial outputs {removed}")
        if on_stage:
            on_stage(stage)
        echo(f"{stage}: running")
        start = time.perf_counter()
        record = STAGE_FUNCTIONS[stage](ctx)
        seconds[stage] = time.perf_counter() - start
        state.mark_done(run_dir, stage, {**record, "seconds": round(seconds[stage], 3)})
        doctor_failed |= bool(record.get("failed"))
        ran.append(stage)
        if "reason" in record:  # the stage had nothing to do (a render with no looks, a bake with no convention)
            echo(f"{stage}: nothing to do: {record['reason']}")
        else:
            echo(f"{stage}: done in {seconds[stage]:.1f} s")
    failures = run_dir / "dataset" / "failures"
    return PipelineResult(run_dir, final_dataset(ctx), failures if failures.is_dir() else None, tuple(ran),
                          tuple(skipped), seconds, dict(ctx.notes), doctor_failed)
