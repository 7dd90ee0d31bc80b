"""The writer's staging folder and its lock: one live writer per dataset root, a staging folder
born whole (`create_staging`), what an interrupted writer finished (`recover_staging`), and what a
killed run of a command that starts over leaves behind (`restart_killed`)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from demoforge.dataset.layout import write_json_atomic
from demoforge.errors import DatasetError, DatasetLockedError

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


def create_staging(root: Path, config: dict[str, Any], *, folders: Iterable[str]) -> int:
    """Make and lock the staging folder of a new dataset in `root` (absent or empty), holding
    `folders` and the writer's `config.json`; returns the lock's fd. DatasetError when `root`
    holds anything else."""
    staging, unborn = root / STAGING_DIR, root / (STAGING_DIR + ".new")
    if unborn.is_dir():  # a create killed before its staging was whole: nothing in it to keep
        os.close(lock_staging(unborn))  # unless another create is making it right now
        shutil.rmtree(unborn)
    if root.exists() and any(root.iterdir()):
        if staging.exists():
            os.close(lock_staging(staging))  # a live writer gets the lock error, not the "non-empty" one
        raise DatasetError(
            f"{root}: not empty; choose a new root, or call DatasetWriter.resume({str(root)!r}) "
            "to continue an interrupted run"
        )
    # The staging folder is built under another name and renamed into place whole, so a
    # staging folder always has its config: a run killed in here leaves nothing to resume.
    fd = lock_staging(unborn)
    try:
        for sub in folders:
            (unborn / sub).mkdir(parents=True, exist_ok=True)
        write_json_atomic(unborn / "config.json", config)
        os.rename(unborn, staging)  # the lock is on the file, which moves with the folder
    except BaseException:  # a full disk before the first episode: nothing to keep, nothing locked
        os.close(fd)
        shutil.rmtree(unborn, ignore_errors=True)
        raise
    return fd


def recover_staging(staging: Path) -> list[dict[str, Any]]:
    """The records of the episodes an interrupted writer finished, in order; the files of the
    episode in progress when it died, and temporary files, are removed."""
    records = []
    n = 0
    while (staging / "episodes" / f"{n:06d}.json").is_file():
        records.append(json.loads((staging / "episodes" / f"{n:06d}.json").read_text()))
        n += 1
    keep = {f"{i:06d}" for i in range(n)}
    for path in staging.rglob("*"):
        if path.is_file() and path.parent != staging and path.name.split(".")[0] not in keep:
            path.unlink()  # the episode in progress when the run died, or temporary files
        elif path.is_file() and path.name.endswith((".tmp", ".part")):
            path.unlink()
    return records


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
