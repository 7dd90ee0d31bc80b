"""The writer's staging folder and its lock: one live writer per dataset root, and what a killed
run of a command that starts over leaves behind (`restart_killed`)."""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

from demoforge.errors import DatasetLockedError

STAGING_DIR = ".demoforge-staging"  # DATASET/.demoforge-staging/: a writer's unfinished work and its lock


def lock_staging(staging: Path) -> int:
    """An exclusive lock on the staging folder `staging` (made if absent), held by the returned fd
    until it is closed; DatasetLockedError while another writer holds it."""
    staging.mkdir(parents=True, exist_ok=True)
    fd = os.open(staging / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise DatasetLockedError(
            f"{staging.parent}: another writer holds this dataset ({staging / 'lock'}); wait for it to finish "
            "or write to another root"
        ) from None
    return fd


def restart_killed(out: str | Path, *, writes: set[str], finished: str) -> bool:
    """True (after removing `out`) when `out` holds only what an unfinished run of a
    non-resumable command writes: names from `writes`, without its `finished` file, with no
    live writer in it (a killed run; the command starts over). False otherwise: the caller
    refuses `out` as it is."""
    out = Path(out)
    names = {p.name for p in out.iterdir()}
    if not names or not names <= writes or finished in names:
        return False
    for staging in out.rglob(STAGING_DIR):
        os.close(lock_staging(staging))  # DatasetLockedError while a live run writes it
    shutil.rmtree(out)
    return True
