"""Fixtures for the conformance tests: the lerobot python and a loader.

`make test` sets DEMOFORGE_LEROBOT_PYTHON to the cached venv that scripts/lerobot-venv.sh
builds. Without it the tests skip, or fail when DEMOFORGE_REQUIRE_LEROBOT=1 so that CI
cannot pass by skipping them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from lerobot_harness import LerobotDump, lerobot_python_or_skip, probe_many, require_dump


@pytest.fixture(scope="session")
def lerobot_python() -> str:
    """Path of the python that has lerobot 0.6.1; skips or fails when there is none."""
    return lerobot_python_or_skip()


@pytest.fixture
def lerobot_load(lerobot_python: str, tmp_path: Path) -> Callable[[Path], LerobotDump]:
    """root -> LerobotDump; fails the test with lerobot's traceback when it cannot load."""

    def load(root: Path) -> LerobotDump:
        (result,) = probe_many(lerobot_python, [root], tmp_path / "probe")
        return require_dump(result)

    return load
