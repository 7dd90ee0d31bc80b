"""Baked datasets loaded by the REAL lerobot 0.6.1: the v3.0 output directly, and the
v2.1 output after lerobot's own v2.1 -> v3.0 converter (scripts/convert_dataset_v21_to_v30).
lerobot must return exactly the state and action bake wrote, the decimated frames, and
the tasks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from demoforge.convert import BakeConfig, bake
from demoforge.dataset import open_dataset
from lerobot_harness import FIXTURES, mean_abs_diff01, probe_many, require_dump

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.convert._sources import CAMS, write_raw  # noqa: E402
from tests.timeouts import SUBPROCESS_S  # noqa: E402

pytestmark = pytest.mark.conformance

CONVERT = """
import sys
from lerobot.scripts.convert_dataset_v21_to_v30 import convert_dataset
convert_dataset(repo_id="local/bake-v21", root=sys.argv[1], push_to_hub=False)
"""


def _expected(root: Path) -> dict[str, np.ndarray]:
    ds = open_dataset(root)
    cols = {"observation.state": [], "action": [], "raw_command": []}
    frames = {k: [] for k in CAMS}
    for i in ds.episode_indices:
        data = ds.read_episode(i)
        for k in cols:
            cols[k].append(data[k])
        for k in CAMS:
            frames[k].append(ds.read_video(i, k))
    out = {k: np.concatenate(v) for k, v in cols.items()}
    out.update({k: np.concatenate(v) for k, v in frames.items()})
    return out


def _assert_same(dump, expected, tasks):
    for key in ("observation.state", "action", "raw_command"):
        np.testing.assert_array_equal(dump.columns[key].reshape(expected[key].shape), expected[key])
    for key in CAMS:
        got = dump.columns[key]
        if got.shape[-1] != 3:  # lerobot returns channels first
            got = np.moveaxis(got, 1, -1)
        assert mean_abs_diff01(got, expected[key]) < 0.01
    assert dump.tasks.tolist() == tasks


@pytest.fixture(scope="module")
def baked(tmp_path_factory):
    base = tmp_path_factory.mktemp("bake_conformance")
    raw = write_raw(base / "raw", lengths=(12, 9))
    cfg = dict(control_space="joint_vel", control_freq=30)
    v3 = bake([raw], base / "v3", BakeConfig(**cfg))
    v21 = bake([raw], base / "v21", BakeConfig(**cfg, lerobot_format="v2.1"))
    fixture = FIXTURES / "lerobot061_video"
    foreign = None
    if (fixture / "meta" / "info.json").is_file():  # lerobot-written source: joint_vel from its state
        foreign = bake([fixture], base / "foreign", BakeConfig(control_space="joint_vel", control_freq=15))
    return base, v3, v21, foreign


def test_bake_v3_and_v21_load_in_real_lerobot(lerobot_python, baked):
    base, v3, v21, foreign = baked
    converted = base / "v21-converted"
    shutil.copytree(v21, converted)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(base / "hf"),
                "HF_DATASETS_CACHE": str(base / "hf_datasets"), "HF_LEROBOT_HOME": str(base / "lerobot_home")})
    proc = subprocess.run([lerobot_python, "-c", CONVERT, str(converted)], capture_output=True, text=True,
                          timeout=SUBPROCESS_S, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    expected = _expected(v3)
    tasks = ["stack 0"] * 6 + ["stack 1"] * 5
    roots = [v3, converted] + ([foreign] if foreign else [])
    dumps = [require_dump(r) for r in probe_many(lerobot_python, roots, base / "probe")]
    for dump in dumps[:2]:
        assert dump.meta["fps"] == 30 and dump.meta["num_episodes"] == 2 and dump.meta["num_frames"] == 11
        _assert_same(dump, expected, tasks)
    if foreign:
        ds = open_dataset(foreign)
        for key in ("observation.state", "action"):
            want = np.concatenate([ds.read_episode(i)[key] for i in ds.episode_indices])
            np.testing.assert_array_equal(dumps[2].columns[key].reshape(want.shape), want)
        assert dumps[2].meta["fps"] == 15
