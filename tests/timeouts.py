"""Wall-clock limits for tests that wait on a subprocess or a worker.

The suite must pass on a busy machine (both cores taken by other work: CI neighbours, other
jobs), where importing torch or starting Ray takes several times as long as on an idle one.
These limits only bound how long a hung test takes to fail; nothing asserts on speed. Scale
them with DEMOFORGE_TEST_TIMEOUT_SCALE (e.g. 2 on a very slow machine)."""

import os

SCALE = float(os.environ.get("DEMOFORGE_TEST_TIMEOUT_SCALE", "1"))


def limit(seconds: float) -> float:
    """`seconds` scaled by DEMOFORGE_TEST_TIMEOUT_SCALE."""
    return seconds * SCALE


SUBPROCESS_S = limit(1800.0)  # a whole child process: a lerobot probe (torch import), a Ray run
WAIT_S = limit(600.0)  # waiting for a child or worker to reach a point (start-up, first episode)
