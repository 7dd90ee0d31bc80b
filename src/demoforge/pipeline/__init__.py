"""One command for the whole pipeline: task generation -> scene packages -> execution ->
render passes -> merge -> annotate -> bake -> doctor, with resume markers and provenance.

    from demoforge.pipeline import resolve_config, run_pipeline
    config = resolve_config(None, {"experiment_id": "smoke", "smoke_test": True, "looks": ["plain"]})
    result = run_pipeline(config)
    result.final, result.doctor_summary

Modules: `config` (the validated record), `stages` (one function per stage, the run folder
layout), `state` (.pipeline_state markers), `provenance`, `run` (`run_pipeline`), `annotate` (goal.action,
goal.position), `play` (chained goals without resets), `execution` (a run's executor, local or Ray,
and its execute stage), `demo`.
"""

from demoforge.pipeline.config import (
    STAGES,
    PipelineConfig,
    PipelineError,
    config_from_dict,
    dump_config,
    resolve_config,
)
from demoforge.pipeline.run import PipelineResult, run_pipeline

__all__ = [
    "STAGES", "PipelineConfig", "PipelineError", "PipelineResult", "config_from_dict", "dump_config",
    "resolve_config", "run_pipeline",
]
