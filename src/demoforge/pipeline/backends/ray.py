"""The Ray backend: the execute stage run by `run_stage` on `demoforge.stage.ray.RayExecutor`
(render, annotate and bake take the same executor in `pipeline.stages` under `backend: ray`).

    demoforge run --experiment-id X --backend ray --ray-address HEAD:PORT

The execute stage is the same `GenerateStage` the local backend runs, with every setting it
carries (robot, seeds, runner settings, randomization); only its executor differs. Each item
(one per problem) is a Ray task writing that problem's shards under RUN/execute/.shards/ on
storage every node shares (the run folder must be on it); the driver merges them in problem
order, so the bytes equal the local backend's for the same seed. A task whose worker or node
dies is retried by Ray and continues from the episodes already durable in its shard.

Ray is an optional extra (`pip install 'demoforge[ray]'`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from demoforge.execute import GenerateSummary
from demoforge.pipeline.backends.local import execute_local
from demoforge.pipeline.config import PipelineConfig, PipelineError
from demoforge.stage import ProgressEvent


def execute_ray(config: PipelineConfig, inputs: list[str], out: Path,
                progress: Callable[[ProgressEvent], None] | None = None, *,
                run_with: Callable | None = None) -> GenerateSummary:
    """Run every problem of `inputs` into `out` as Ray tasks; merge on the driver. `run_with`: see
    `execute_local` (the pipelined schedule's render items run as Ray tasks too)."""
    try:
        import ray  # noqa: F401
    except ImportError:
        raise PipelineError("backend 'ray' needs Ray: pip install 'demoforge[ray]'") from None
    from demoforge.stage.ray import RayExecutor

    with RayExecutor(config.ray_address) as executor:
        return execute_local(config, inputs, Path(out).resolve(), progress, executor=executor, run_with=run_with)
