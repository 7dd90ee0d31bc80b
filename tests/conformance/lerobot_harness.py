"""Run the real lerobot 0.6.1 (own venv, Python >= 3.12) on dataset roots and compare.

lerobot needs Python >= 3.12 and torch, so it never shares demoforge's interpreter: the
tests write datasets here and run `lerobot_probe.py` under the python named by
DEMOFORGE_LEROBOT_PYTHON, then compare the .npz it leaves with what was written.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.lerobot_fixtures import FIXTURES  # noqa: F401  (re-exported to the conformance tests)
from tests.timeouts import SUBPROCESS_S

PROBE = Path(__file__).with_name("lerobot_probe.py")
PROBE_TIMEOUT_S = SUBPROCESS_S  # torch's import alone takes minutes on a loaded machine


@dataclass(frozen=True)
class LerobotDump:
    """Every frame of one dataset as the real lerobot returned it."""

    columns: dict[str, np.ndarray]  # feature -> values stacked over frames; video uint8 (T, H, W, C)
    tasks: np.ndarray  # task string of every frame
    meta: dict[str, Any]  # num_episodes, num_frames, fps, video_backend, video_keys, features, tasks
    stats: dict[str, dict[str, Any]]  # meta/stats.json as lerobot loaded it


@dataclass(frozen=True)
class ProbeFailure:
    """lerobot raised while loading or iterating a dataset."""

    root: Path
    traceback: str


def missing_lerobot_reason() -> str | None:
    python = os.environ.get("DEMOFORGE_LEROBOT_PYTHON", "")
    if not python:
        return "DEMOFORGE_LEROBOT_PYTHON is not set"
    if not Path(python).is_file() or not os.access(python, os.X_OK):
        return f"DEMOFORGE_LEROBOT_PYTHON={python!r} is not an executable file"
    return None


def lerobot_python_or_skip() -> str:
    """The python that has lerobot 0.6.1; skips the test when there is none, or fails it when
    DEMOFORGE_REQUIRE_LEROBOT=1 (so CI cannot pass by skipping)."""
    import pytest

    reason = missing_lerobot_reason()
    if reason is not None:
        message = (f"real lerobot unavailable: {reason}; run `make test`, which builds the lerobot venv "
                   "(scripts/lerobot-venv.sh) and sets DEMOFORGE_LEROBOT_PYTHON")
        if os.environ.get("DEMOFORGE_REQUIRE_LEROBOT") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return os.environ["DEMOFORGE_LEROBOT_PYTHON"]


def _load_dump(path: Path) -> LerobotDump:
    with np.load(path, allow_pickle=False) as z:
        columns = {k: z[k] for k in z.files if not k.startswith("__")}
        return LerobotDump(
            columns=columns,
            tasks=z["__task__"],
            meta=json.loads(str(z["__meta__"])),
            stats=json.loads(str(z["__stats__"])),
        )


def probe_many(python: str, roots: list[Path], workdir: Path,
               options: list[dict | None] | None = None) -> list[LerobotDump | ProbeFailure]:
    """Load every root with real lerobot in ONE subprocess (torch import costs seconds).

    `options[i]` (JSON-able) are extra LeRobotDataset arguments for roots[i]."""
    workdir.mkdir(parents=True, exist_ok=True)
    outs = [workdir / f"probe-{i}.npz" for i in range(len(roots))]
    options = options or [None] * len(roots)
    spec = [{"root": str(r), "out": str(o), "options": opt or {}} for r, o, opt in zip(roots, outs, options)]
    spec_path = workdir / "probe-spec.json"
    spec_path.write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    proc = subprocess.run([python, str(PROBE), str(spec_path)], capture_output=True, text=True,
                          timeout=PROBE_TIMEOUT_S, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"lerobot probe exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    results: list[LerobotDump | ProbeFailure] = []
    for root, out in zip(roots, outs):
        error = out.with_name(out.name + ".error")
        if error.exists():
            results.append(ProbeFailure(root, error.read_text()))
        elif out.exists():
            results.append(_load_dump(out))
        else:
            results.append(ProbeFailure(root, f"probe wrote nothing; stderr:\n{proc.stderr[-4000:]}"))
    return results


def require_dump(result: LerobotDump | ProbeFailure) -> LerobotDump:
    if isinstance(result, ProbeFailure):
        pytest.fail(f"real lerobot failed on {result.root}:\n{result.traceback}", pytrace=False)
    return result


def mean_abs_diff01(a: np.ndarray, b: np.ndarray) -> float:
    """Mean absolute difference of two uint8 images/videos on a [0, 1] scale."""
    assert a.shape == b.shape, f"shape {a.shape} != {b.shape}"
    return float(np.mean(np.abs(a.astype(np.float64) - b.astype(np.float64))) / 255.0)

