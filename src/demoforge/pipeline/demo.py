"""The `make demo` run: the embedded example config, run with `run_pipeline` and summarised.

    from demoforge.pipeline.demo import run_demo
    result = run_demo("out/demo-runs")   # prints where the dataset is and the doctor's summary
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from demoforge.pipeline.config import config_from_dict
from demoforge.pipeline.runner import PipelineResult, run_pipeline

# Two stack_three problems, two episodes each, plain look on the front camera, baked to
# joint_target (the default convention): a few minutes on 2 cores.
DEMO_CONFIG = {
    "experiment_id": "demo", "family": "stack_three", "problems": 2, "task_seed": 0, "reset_states": 2,
    "episodes_per_problem": 2, "envs": 2, "workers": "auto", "seed": 0, "render_passes": ["plain"],
    "cameras": ["front"], "bake_convention": "joint_target",
}


def run_demo(out_dir: str | Path = "out/pipeline-demo", *, echo: Callable[[str], None] = print,
             fresh: bool = True, **overrides) -> PipelineResult:
    """Run the demo pipeline into OUT_DIR/demo (an earlier demo there is replaced when `fresh`)
    and print where the dataset is and the doctor's summary."""
    config = config_from_dict({**DEMO_CONFIG, "out_dir": str(out_dir), **overrides}, "demo config")
    if fresh and (config.run_dir / "config.yaml").is_file():
        shutil.rmtree(config.run_dir)
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
