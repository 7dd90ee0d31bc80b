"""The committed lerobot-written fixtures are what their script makes: run
`tests/fixtures/lerobot/make_fixtures.py` with the real lerobot 0.6.1 and compare its datasets
with the committed ones (values exactly, the video within the codec's noise)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import av
import numpy as np
import pyarrow.parquet as pq
import pytest
from tests.lerobot_fixtures import FIXTURES
from tests.timeouts import SUBPROCESS_S

pytestmark = pytest.mark.conformance

SCRIPT = FIXTURES / "make_fixtures.py"
DATA = Path("data/chunk-000/file-000.parquet")
VIDEO = Path("videos/observation.images.front/chunk-000/file-000.mp4")


def _frames(path: Path) -> np.ndarray:
    with av.open(str(path)) as container:
        return np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)]).astype(np.int16)


@pytest.mark.parametrize("name, flags", [("lerobot061_state_only", ["--state-only"]), ("lerobot061_video", [])])
def test_the_script_writes_the_committed_fixture(name, flags, lerobot_python, tmp_path):
    out = tmp_path / name
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    done = subprocess.run([lerobot_python, str(SCRIPT), str(out), *flags], capture_output=True, text=True,
                          timeout=SUBPROCESS_S, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    committed = FIXTURES / name
    for key in ("features", "fps", "total_episodes", "total_frames", "total_tasks", "robot_type"):
        assert json.loads((out / "meta/info.json").read_text())[key] == \
            json.loads((committed / "meta/info.json").read_text())[key], key
    assert pq.read_table(out / DATA).equals(pq.read_table(committed / DATA))
    assert pq.read_table(out / "meta/tasks.parquet").equals(pq.read_table(committed / "meta/tasks.parquet"))
    if (committed / VIDEO).exists():
        made, kept = _frames(out / VIDEO), _frames(committed / VIDEO)
        assert made.shape == kept.shape == (300, 96, 96, 3)
        assert np.abs(made - kept).mean() < 2.0  # the same picture; AV1 builds differ in their last bits
