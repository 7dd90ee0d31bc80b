"""The `make demo` run: the embedded example config, run with `run_pipeline` and summarised.

    from demoforge.pipeline.demo import run_demo
    result = run_demo("out/demo-runs")   # prints where the dataset is and the doctor's summary
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from demoforge.pipeline.config import (
    PipelineConfig,
    PipelineError,
    config_from_dict,
    merge,
    nest,
    output_fields,
    saved_output_fields,
)
from demoforge.pipeline.run import CONFIG_FILE, PipelineResult, run_pipeline
from demoforge.pipeline.stages import STAGE_OUTPUTS
from demoforge.pipeline.state import STATE_DIR

# Two stack_three problems, two episodes each, plain look on the front camera, baked to
# joint_target (the default convention): about 20 s on a 2-core CPU.
DEMO_CONFIG = {
    "experiment_id": "demo", "workers": "auto", "seed": 0,
    "tasks": {"family": "stack_three", "problems": 2, "task_seed": 0}, "scenes": {"reset_states": 2},
    "execute": {"episodes_per_problem": 2, "envs": 2}, "render": {"looks": ["plain"], "cameras": ["front"]},
    "bake": {"control_space": "joint_target"},
}


def run_demo(out_dir: str | Path = "out/pipeline-demo", *, echo: Callable[[str], None] = print,
             fresh: bool = True, **overrides) -> PipelineResult:
    """Run the demo pipeline into OUT_DIR/demo (an earlier demo there is replaced when `fresh`)
    and print where the dataset is and the doctor's summary."""
    config = config_from_dict(merge(DEMO_CONFIG, nest({"out_dir": str(out_dir), **overrides})), "demo config")
    if fresh and (config.run_dir / CONFIG_FILE).is_file():
        _remove_earlier_demo(config)
    result = run_pipeline(config, resume=not fresh, echo=echo)
    echo(f"dataset: {result.final.resolve()}")
    if result.failures is not None:
        echo(f"failed episodes: {result.failures.resolve()}")
    for stage in ("execute", "merge"):
        if stage in result.notes:
            echo(f"{stage}: {result.notes[stage]}")
    echo(result.doctor_summary)
    echo(f"  report: {(result.run_dir / 'doctor' / 'report.md').resolve()}")
    echo(f"  inspect it with: demoforge dataset info {result.final}")
    return result


def _remove_earlier_demo(config: PipelineConfig) -> None:
    """Remove RUN when it holds only what a pipeline run writes (its config, stage outputs and
    markers) and its config is a demo's; anything else there is refused, never deleted."""
    run_dir = config.run_dir
    made = {CONFIG_FILE, STATE_DIR, "logs", *(p for paths in STAGE_OUTPUTS.values() for p in paths)}
    foreign = sorted(p.name for p in run_dir.iterdir() if p.name not in made)
    if foreign:
        raise PipelineError(f"{run_dir}: holds files no demo run writes ({', '.join(foreign[:5])}); the demo replaces "
                            "only an earlier demo: choose another --out or move those files")
    try:
        saved = saved_output_fields(run_dir / CONFIG_FILE)
    except OSError as exc:
        raise PipelineError(f"{run_dir / CONFIG_FILE}: unreadable ({exc}); the demo replaces only an earlier demo: "
                            "choose another --out") from None
    except PipelineError:
        saved = None
    if saved is None or any(saved.get(k) != v for k, v in output_fields(config).items()):
        raise PipelineError(f"{run_dir}: holds a pipeline run that is not the demo ({run_dir / CONFIG_FILE}); the "
                            "demo replaces only an earlier demo: choose another --out")
    shutil.rmtree(run_dir)
