"""A killed parent's spawned workers, for tests that SIGKILL a run and resume it (Linux: reads /proc).

A worker dies with its parent (PR_SET_PDEATHSIG), but not at the same instant: until it has exited
it still holds its shard's writer lock, so a test that resumes at once must first wait for it, as a
user rerunning the command a moment later does."""

import os
import time
from pathlib import Path


def spawned_children(pid: int) -> list[int]:
    """The multiprocessing workers (spawned: `spawn_main` in their command line) whose parent is `pid`."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == pid and b"spawn_main" in cmdline:
            out.append(int(stat.parent.name))
    return out


def alive(pid: int) -> bool:
    """`pid` runs (a zombie does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pids: list[int], deadline: float) -> None:
    """Until every process of `pids` has exited; AssertionError past `deadline` (time.monotonic())."""
    while any(alive(p) for p in pids):
        assert time.monotonic() < deadline, "a worker outlived its killed parent"
        time.sleep(0.05)


def wait_unlocked(root: Path, deadline: float) -> None:
    """Until no process holds a dataset writer's lock under `root` (a worker of a killed run that
    the snapshot of `spawned_children` missed, still dying); AssertionError past `deadline`."""
    from demoforge.dataset.locks import lock_staging
    from demoforge.errors import DatasetLockedError

    while True:
        held = []
        for lock in root.rglob(".demoforge-staging/lock"):
            try:
                os.close(lock_staging(lock.parent))  # the writer's own lock, released at once
            except DatasetLockedError:
                held.append(lock)
        if not held:
            return
        assert time.monotonic() < deadline, f"a killed run's writer locks are still held: {held}"
        time.sleep(0.05)
