"""A pytest plugin (loaded with `-p outside_guard`) that records every file or folder the test
process opens or lists inside $DEMOFORGE_GUARD_BOX but outside $DEMOFORGE_GUARD_REPO, one path
per line in $DEMOFORGE_GUARD_LOG. Python's audit hooks see `open`, `os.listdir` and
`os.scandir` (so `glob`, `os.walk` and `shutil.copytree` too); reads done inside C libraries
(pyarrow, PyAV) are not audited, which is why the folder beside the copy is poisoned as well."""

from __future__ import annotations

import os
import sys

BOX = os.path.realpath(os.environ["DEMOFORGE_GUARD_BOX"]) + os.sep
REPO = os.path.realpath(os.environ["DEMOFORGE_GUARD_REPO"]) + os.sep
LOG = os.environ["DEMOFORGE_GUARD_LOG"]
EVENTS = ("open", "os.listdir", "os.scandir")


def _hook(event: str, args: tuple) -> None:
    if event not in EVENTS or not args or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    path = os.fsdecode(args[0])
    if not os.path.isabs(path):
        path = os.path.join(os.getcwd(), path)
    path = os.path.realpath(path)
    if (path + os.sep).startswith(BOX) and not (path + os.sep).startswith(REPO):
        with open(LOG, "a", encoding="utf-8") as log:  # LOG lies outside BOX: no recursion
            log.write(f"{event} {path}\n")


sys.addaudithook(_hook)
