"""The Ray backend: the execute stage's work items (one per problem) as Ray tasks on a cluster.

    demoforge run --experiment-id X --backend ray --ray-address HEAD:PORT

Each task runs `demoforge.execute.generate.run_item` for one problem and writes that
problem's shards under RUN/execute/.shards/ on storage every node shares (the run folder
must be on it); the driver merges them in problem order exactly as `generate` does, so the
bytes equal the local backend's for the same seed. A task whose worker or node dies is
retried by Ray (`MAX_RETRIES`) and continues from the episodes already durable in its shard.

Ray is an optional extra (`pip install 'demoforge[ray]'`). This module builds on generate's
helpers (`run_item`, `ShardMerge`, the private `_run_record`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from demoforge.execute import GenerateSummary, RunnerSettings
from demoforge.pipeline.config import PipelineConfig, PipelineError, robot_card, robot_start_params

MAX_RETRIES = 3  # attempts of a work item after its worker dies


def _item(run, k: int) -> dict:
    import time

    import ray

    from demoforge.execute.generate import run_item

    # which node ran which attempt: for the logs, and for tests that kill a node
    attempts = run.out / ".ray"
    attempts.mkdir(parents=True, exist_ok=True)
    (attempts / f"{k:04d}-{time.time_ns()}.json").write_text(json.dumps(
        {"item": k, "node": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}))
    return asdict(run_item(run, k))


def execute_ray(config: PipelineConfig, inputs: list[str], out: Path,
                progress: Callable[[tuple], None] | None = None, *, settings: RunnerSettings = RunnerSettings(),
                domain: str = "blocks") -> GenerateSummary:
    """Run every problem of `inputs` into `out` as Ray tasks; merge on the driver."""
    try:
        import ray
    except ImportError:
        raise PipelineError("backend 'ray' needs Ray: pip install 'demoforge[ray]'") from None
    from demoforge.execute.generate import (
        RunSpec, ShardMerge, _run_record, finished_run, open_run_folder, resolve_workers, run_problems,
    )
    from demoforge.execute.record import run_layout

    out = Path(out).resolve()
    problems = run_problems(inputs, domain=domain, randomization=None, robot=robot_card(config),
                            robot_start=robot_start_params(config, inputs))
    layout = run_layout(problems, fps=round(settings.control_hz))
    record = _run_record(inputs, problems, config.episodes_per_problem, config.seed, settings, None)
    if (done := finished_run(out, record, problems)) is not None:
        return done  # the same run, finished: nothing to do
    open_run_folder(out, record)  # a rerun's partial splits are cleared; other inputs are refused
    started = not ray.is_initialized()
    if started and config.ray_address:
        ray.init(address=config.ray_address, log_to_driver=False, runtime_env={"env_vars": {"MUJOCO_GL": "egl"}})
    elif started:
        # no address: a Ray of our own on this machine, never a cluster found by accident. Its
        # workers inherit this environment; a runtime_env would have Ray start fresh workers
        # for the job instead of the ones it started with itself (about 1.5 s each)
        os.environ.setdefault("MUJOCO_GL", "egl")
        ray.init(address="local", log_to_driver=False)
    try:
        task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=False)(_item)
        # problems and layout built once here and shipped to every task through the object store
        run = ray.put(RunSpec(out, tuple(problems), layout, config.episodes_per_problem, config.seed, config.envs,
                              settings))
        refs = {task.remote(run, k): p.name for k, p in enumerate(problems)}
        pending = list(refs)
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        # the finish runs here once the tasks are done: on this machine's cores
        with ShardMerge(out, problems, layout, record, threads=resolve_workers("auto", 2)) as merge:
            merge.feed()  # items finished by an earlier, interrupted run
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    ray.get(ref)  # raises the task's error
                    if progress is not None:
                        progress(("item", refs[ref]))
                # the driver merges finished items while the last tasks run (a CPU is free then),
                # or when a backlog builds up; before, it would take a CPU from a running task
                if len(pending) < cpus or merge.backlog() > 2 * cpus:
                    merge.feed()
            return merge.finish()
    finally:
        if started:
            ray.shutdown()
