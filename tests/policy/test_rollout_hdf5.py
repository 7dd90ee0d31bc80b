"""`rollout --output-format hdf5`: the roll-out's episodes in robomimic's layout, read back by the
robomimic reader (`convert.robomimic`) and baked."""

import json
import sys

import numpy as np
import pytest

from demoforge.convert import BakeConfig, bake
from demoforge.convert.robomimic import read_robomimic
from demoforge.dataset import check_dataset, open_dataset
from demoforge.errors import DemoforgeError
from demoforge.policy import RolloutSettings, load_policy, rollout
from demoforge.policy.hdf5 import write_rollout_hdf5
from tests.convert._sources import CAMS, HW, write_raw

h5py = pytest.importorskip("h5py")


def test_rollout_writes_robomimic_hdf5_that_reads_back_and_bakes(pnp, tmp_path):
    out = tmp_path / "r"
    rollout(load_policy("tests.policy.scripted:hold"), [pnp], out, episodes=2, envs=1,
            settings=RolloutSettings(max_ticks=20, warmup_ticks=5), spec="hold", output_format="hdf5")
    path = out / "dataset.hdf5"
    assert check_dataset(path) == []
    v3 = open_dataset(out / "dataset")
    eps = list(read_robomimic(path))
    assert [e.outcome for e in eps] == ["failure", "failure"] and [e.reader for e in eps] == ["robomimic_hdf5"] * 2
    for k, ep in enumerate(eps):
        cols = v3.read_episode(k)
        state = cols["observation.state"]
        np.testing.assert_array_equal(ep.q, state[:, :-1].astype(np.float64))
        np.testing.assert_array_equal(ep.gripper, state[:, -1].astype(np.float64))
        np.testing.assert_array_equal(ep.action, cols["action"].astype(np.float64))
        assert ep.task == v3.episode(k)["tasks"][0] and ep.fps == v3.info.fps
        assert ep.gripper_meaning["quantity"] == "closedness"
        assert ep.columns["next.reward"].ravel().tolist() == [0.0] * ep.length  # failures: no success reward
        assert ep.columns["next.done"].ravel().tolist() == [False] * (ep.length - 1) + [True]
    with h5py.File(path, "r") as f:
        args = json.loads(f["data"].attrs["env_args"])
        assert args["env_kwargs"]["control_freq"] == v3.info.fps and int(f["data"].attrs["total"]) == 40
        assert f["data/demo_1/states"].shape[0] == 20
    baked = bake([path], tmp_path / "baked", BakeConfig(control_space="joint_pos", include_failures=True))
    np.testing.assert_array_equal(open_dataset(baked).read_episode(1)["observation.state"],
                                  v3.read_episode(1)["observation.state"])


def test_rollout_hdf5_carries_cameras_and_is_deterministic(tmp_path):
    raw = write_raw(tmp_path / "raw", (7, 5))
    a = write_rollout_hdf5(raw, tmp_path / "a.hdf5")
    b = write_rollout_hdf5(raw, tmp_path / "b.hdf5")
    assert a.read_bytes() == b.read_bytes()
    ds = open_dataset(raw)
    with h5py.File(a, "r") as f:
        for k, n in enumerate((7, 5)):
            for key in CAMS:
                frames = f[f"data/demo_{k}/obs/{key.rsplit('.', 1)[1]}_image"]
                assert frames.shape == (n, *HW, 3) and frames.dtype == np.uint8
                np.testing.assert_array_equal(frames[()], ds.read_video(k, key))
            assert f[f"data/demo_{k}"].attrs["outcome"] == "success"
            assert f[f"data/demo_{k}/rewards"][-1] == 1.0


def test_an_existing_file_is_never_written_over(tmp_path):
    raw = write_raw(tmp_path / "raw", (4,), cams=())
    (tmp_path / "x.hdf5").write_bytes(b"mine")
    with pytest.raises(DemoforgeError, match=r"x\.hdf5: exists; choose a new file"):
        write_rollout_hdf5(raw, tmp_path / "x.hdf5")
    assert (tmp_path / "x.hdf5").read_bytes() == b"mine"


def test_without_h5py_rollout_hdf5_is_refused_before_any_episode(pnp, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)
    with pytest.raises(DemoforgeError, match=r"pip install 'demoforge\[hdf5\]'"):
        rollout(load_policy("tests.policy.scripted:hold"), [pnp], tmp_path / "r", episodes=1,
                settings=RolloutSettings(max_ticks=5, warmup_ticks=1), spec="hold", output_format="hdf5")
    assert not (tmp_path / "r").exists()
