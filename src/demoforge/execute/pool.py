"""Worker slots for generate: the stage runner's local executor (`demoforge.stage.local`)."""

from __future__ import annotations

from demoforge.execute.problems import ExecuteError
from demoforge.stage.local import LocalExecutor, WorkerPool
from demoforge.stage.local import refuse_in_worker_start_up as _refuse

__all__ = ["LocalExecutor", "WorkerPool", "refuse_in_worker_start_up"]


def refuse_in_worker_start_up(call: str) -> None:
    """See `demoforge.stage.local.refuse_in_worker_start_up` (raised as an ExecuteError)."""
    _refuse(call, error=ExecuteError)
