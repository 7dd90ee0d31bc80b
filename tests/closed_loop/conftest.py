"""Closed-loop tests: stock lerobot 0.6.1 (lerobot-eval, lerobot-train) on the demoforge env plugin.

They run in the Python 3.12 venv that holds demoforge, the plugin and lerobot together
(`make .venv-lerobot`, scripts/lerobot-dev-venv.sh); `make test` runs them there with
DEMOFORGE_REQUIRE_CLOSED_LOOP=1, so they fail instead of skipping when lerobot is missing.
Elsewhere (the Python 3.11 suite) they skip.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gym.conftest import family_baked, family_run  # noqa: F401  (shared session fixtures)
from tests.timeouts import SUBPROCESS_S


def _missing() -> str | None:
    for mod in ("lerobot", "lerobot_env_demoforge", "torch"):
        if importlib.util.find_spec(mod) is None:
            return f"{mod} is not importable in {sys.executable}"
    return None


@pytest.fixture(scope="session", autouse=True)
def lerobot_here():
    reason = _missing()
    if reason is not None:
        message = f"closed loop needs lerobot and the plugin in this venv: {reason}; run `make test`"
        if os.environ.get("DEMOFORGE_REQUIRE_CLOSED_LOOP") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


def lerobot(script: str, *args: str, cwd: Path, timeout: float = SUBPROCESS_S) -> subprocess.CompletedProcess:
    """Run lerobot's console script (`lerobot_eval` -> `lerobot-eval`) of this venv with ARGS, as a
    user types it; fail with its output tail."""
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"), "OMP_NUM_THREADS": "1",
           "HF_HUB_OFFLINE": "1"}
    command = Path(sys.executable).parent / script.replace("_", "-")
    proc = subprocess.run([str(command), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        pytest.fail(f"{script} exited {proc.returncode}:\n{(proc.stdout + proc.stderr)[-4000:]}", pytrace=False)
    return proc


def eval_info(out: Path) -> dict:
    return json.loads((out / "eval_info.json").read_text())
