"""The Ray executor of `run_stage`: a stage's work items as Ray tasks on a cluster.

    run_stage(stage, out, executor=RayExecutor(address="HEAD:PORT"))

Each task runs `runner.run_one` for one item: the whole stage object (every setting it carries)
is shipped through the object store, so a stage runs on Ray exactly as on the local pool. Shards
are written under the run's work folder, which must be on storage every node mounts at the same
path; the driver merges them in item order, so the bytes equal the local executor's. Only the
stage object and the item's node id travel through the object store, never episode data: on a
cluster without shared storage, the first item that finishes on another node is reported (its
shard is not on the driver's disk) and the run stops; its own finished items stay resumable. A task whose worker or node
dies is retried by Ray (`max_retries`) and continues from what its shard already holds.

Ray is an optional extra (`pip install 'demoforge[ray]'`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable

from demoforge.stage.protocol import Progress, ProgressEvent, StageError
from demoforge.stage.runner import DONE_FILE, ready, run_one

MAX_RETRIES = 3  # attempts of a work item after its worker dies
ATTEMPTS_DIR = ".ray"  # WORK/.ray/<k>-<ns>.json: which node ran which attempt (logs; tests that kill a node)


def _item(run, k: int) -> str:
    """Run item `k` of `run`; returns the id of the node that ran it."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    attempts = run.work / ATTEMPTS_DIR
    attempts.mkdir(parents=True, exist_ok=True)
    (attempts / f"{k:04d}-{time.time_ns()}.json").write_text(json.dumps({"item": k, "node": node, "pid": os.getpid()}))
    run_one(run, k)
    return node


def cluster_env() -> dict[str, str]:
    """The environment a cluster's workers get: MuJoCo on EGL and every DEMOFORGE_* variable set here."""
    return {"MUJOCO_GL": "egl", **{k: v for k, v in sorted(os.environ.items()) if k.startswith("DEMOFORGE_")}}


class RayExecutor:
    """Runs a stage's items as Ray tasks (one CPU each). `address`: a cluster's HEAD:PORT; None
    starts a Ray of its own on this machine (never a cluster found by accident)."""

    def __init__(self, address: str | None = None, *, max_retries: int = MAX_RETRIES):
        try:
            import ray
        except ImportError:
            raise StageError("the Ray executor needs Ray: pip install 'demoforge[ray]'") from None
        self.address, self.max_retries = address, max_retries
        self._started = not ray.is_initialized()
        if self._started and address:
            # A cluster's workers do not inherit this process's environment: hand them demoforge's own
            # settings (the task packages loaded here, DEMOFORGE_TASK_PACKAGES, among them)
            ray.init(address=address, log_to_driver=False, runtime_env={"env_vars": cluster_env()})
        elif self._started:
            # Its workers inherit this environment; a runtime_env would have Ray start fresh
            # workers for the job instead of the ones it started with itself (about 1.5 s each)
            os.environ.setdefault("MUJOCO_GL", "egl")
            ray.init(address="local", log_to_driver=False)
        self.slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.placements: list[tuple[str, str, str]] = []  # (stage, item label, node id) of each finished item

    def run(self, run, items: list[int], progress: Progress | None, between: Callable[[bool], object]) -> None:
        import ray

        task = ray.remote(num_cpus=1, max_retries=self.max_retries, retry_exceptions=False)(_item)
        shared = ray.put(run)  # the stage built once here, shipped to every task
        held = list(items)  # items whose needs (`Stage.needs`) are not final yet: submitted once they are
        refs: dict = {}  # task -> its item
        pending: list = []  # tasks submitted and not finished

        def submit() -> None:
            for k in [k for k in held if ready(run, k)]:
                held.remove(k)
                ref = task.remote(shared, k)
                refs[ref] = k
                pending.append(ref)

        submit()
        while pending or held:
            if not pending:
                raise StageError(f"{run.stage.name}: items {[run.labels[k] for k in held]} need items that are "
                                 "neither final nor in this run")
            done, pending[:] = ray.wait(pending, num_returns=1)
            for ref in done:
                node = ray.get(ref)  # raises the task's error
                k = refs[ref]
                self.placements.append((run.stage.name, run.labels[k], node))
                self._check_shared(run, k, node)
                if progress is not None:
                    progress(ProgressEvent(run.stage.name, "item", run.labels[k]))
            submit()
            # the driver merges finished items while the last tasks run (a CPU is free then); before,
            # it would take a CPU from a running task
            between(len(pending) < self.slots)

    @staticmethod
    def _check_shared(run, k: int, node: str) -> None:
        """A finished item's shard must be on the driver's disk: on a cluster whose nodes do not
        share the run folder, the task wrote it to its own node's disk, where the merge never sees it."""
        if not (run.shard(k) / DONE_FILE).is_file():
            raise StageError(f"{run.stage.name}: item {run.labels[k]} finished on Ray node {node}, but its shard "
                             f"{run.shard(k)} is not on this machine: the run folder must be on storage every node "
                             "mounts at the same path (NFS, a cluster file system); rerun with --out there")

    def close(self) -> None:
        import ray

        if self._started and ray.is_initialized():
            ray.shutdown()

    def __enter__(self) -> "RayExecutor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
