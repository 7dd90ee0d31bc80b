"""Bake and `dataset check` on robomimic-layout HDF5 files.

The files are written here with h5py in the layout robomimic documents (docs/datasets/overview.md;
robomimic/scripts/dataset_states_to_obs.py writes it): robomimic itself is not installed, since its
package pulls torch. data.attrs: total, env_args (JSON with robosuite's env_kwargs.control_freq);
data/demo_<i>: attrs num_samples, datasets actions, states, rewards, dones, obs/robot0_joint_pos,
obs/robot0_gripper_qpos, obs/object and obs/agentview_image.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.convert import BakeConfig, BakeError, bake
from demoforge.dataset import open_dataset
from demoforge.errors import DemoforgeError

h5py = pytest.importorskip("h5py")

FPS = 20
HW = (32, 48)


def level(demo: int, tick: int) -> int:
    """The grey level of a demo's frame at a tick (a uniform frame survives lossy coding)."""
    return (40 + 30 * demo + 11 * tick) % 240


def joint_pos(demo: int, n: int) -> np.ndarray:
    """Known motion, exact in float32: q[t, j] = (j + 1) t / 256 + demo / 8."""
    return (np.arange(1, 8) * np.arange(n)[:, None]) / 256 + demo / 8


def write_robomimic(path: Path, lengths=(6, 9), *, images: bool = True, fps: int | None = FPS) -> Path:
    kwargs = {"control_freq": fps} if fps is not None else {}
    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        for k, n in enumerate(lengths):
            demo = data.create_group(f"demo_{k}")
            demo.create_dataset("actions", data=np.tile(np.arange(7) / 8, (n, 1)) + k)
            demo.create_dataset("states", data=np.arange(n * 5, dtype=np.float64).reshape(n, 5))
            demo.create_dataset("rewards", data=np.r_[np.zeros(n - 1), 1.0])
            demo.create_dataset("dones", data=np.r_[np.zeros(n - 1), 1].astype(np.int64))
            obs = demo.create_group("obs")
            obs.create_dataset("robot0_joint_pos", data=joint_pos(k, n))
            fingers = 0.04 - np.arange(n) / 256
            obs.create_dataset("robot0_gripper_qpos", data=np.stack([fingers, -fingers], axis=1))
            obs.create_dataset("object", data=np.full((n, 10), k, dtype=np.float64))
            if images:
                frames = np.stack([np.full((*HW, 3), level(k, t), np.uint8) for t in range(n)])
                obs.create_dataset("agentview_image", data=frames)
            demo.attrs["num_samples"] = n
        data.attrs["total"] = sum(lengths)
        data.attrs["env_args"] = json.dumps({"env_name": "Lift", "env_type": 1, "env_kwargs": kwargs})
    return path


@pytest.fixture(scope="module")
def lift(tmp_path_factory) -> Path:
    return write_robomimic(tmp_path_factory.mktemp("robomimic") / "lift.hdf5")


@pytest.fixture(scope="module")
def baked(lift, tmp_path_factory) -> Path:
    return bake([lift], tmp_path_factory.mktemp("baked") / "out", BakeConfig(control_space="as_recorded",
                                                                           keep=("all",)))


def test_bake_of_robomimic_hdf5_gives_state_action_columns_and_camera(lift, baked):
    ds = open_dataset(baked)
    assert ds.info.fps == FPS and ds.num_episodes == 2 and ds.tasks == ["Lift"]
    assert ds.info.video_keys == ["observation.images.agentview"]
    assert ds.info.features["observation.state"].names == [f"joint_{k}" for k in range(7)] + ["gripper"]
    for k, n in enumerate((6, 9)):
        got = ds.read_episode(k)
        fingers = 0.04 - np.arange(n) / 256
        want_state = np.concatenate([joint_pos(k, n), 2 * fingers[:, None]], axis=1).astype(np.float32)
        np.testing.assert_array_equal(got["observation.state"], want_state)
        np.testing.assert_array_equal(got["action"], (np.tile(np.arange(7) / 8, (n, 1)) + k).astype(np.float32))
        # --keep all carries the other observations, the MuJoCo states, rewards and dones
        np.testing.assert_array_equal(got["observation.object"], np.full((n, 10), k, np.float32))
        np.testing.assert_array_equal(got["states"], np.arange(n * 5, dtype=np.float64).reshape(n, 5))
        assert got["next.done"].ravel().tolist() == [False] * (n - 1) + [True]
        assert got["next.reward"].ravel()[-1] == 1.0
        frames = ds.read_video(k, "observation.images.agentview")
        assert frames.shape == (n, *HW, 3)
        np.testing.assert_allclose(frames.reshape(n, -1).mean(axis=1), [level(k, t) for t in range(n)], atol=3)


def test_bake_stamp_names_the_hdf5_file_its_reader_and_gripper_meaning(lift, baked):
    stamp = json.loads((baked / "meta/bake.json").read_text())
    assert stamp["sources"][0]["root"] == str(lift) and stamp["sources"][0]["reader"] == "robomimic_hdf5"
    assert stamp["gripper"]["quantity"] == "finger opening [m]"
    assert any("'robomimic_hdf5' reader" in n for n in stamp["notes"])
    # the import beside OUT is gone once the bake is published
    assert not (baked.parent / f".{baked.name}.bake-imports").exists()


def _digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != "provenance.json"}


def test_bake_of_hdf5_is_deterministic(lift, baked, tmp_path):
    again = bake([lift], tmp_path / "again", BakeConfig(control_space="as_recorded", keep=("all",)))
    a, b = _digests(baked), _digests(again)
    assert a.keys() == b.keys()
    assert [k for k in a if a[k] != b[k]] == []


def test_bake_does_not_write_into_the_hdf5_file(tmp_path):
    src = write_robomimic(tmp_path / "src.hdf5", (4,), images=False)
    before = src.read_bytes()
    bake([src], tmp_path / "out", BakeConfig(control_space="joint_pos"))
    assert src.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "src.hdf5"]


def test_dataset_check_reports_every_structure_problem(tmp_path):
    path = write_robomimic(tmp_path / "bad.hdf5", (4, 5), images=False)
    with h5py.File(path, "r+") as f:
        del f["data/demo_1/actions"]
        del f["data/demo_0/obs/object"]
        f["data/demo_0/obs/object"] = np.zeros((3, 10))
        f["data"].attrs["total"] = 99
    result = CliRunner().invoke(app, ["dataset", "check", str(path)])
    assert result.exit_code == 1
    out = result.output
    assert f"FAILED {path}: 3 problems" in out
    assert "[hdf5.actions] data/demo_1/actions: missing" in out
    assert "[hdf5.length] data/demo_0/obs/object: has 3 rows, the demo 4" in out
    assert "[hdf5.total] data: total is 99 but the demos hold 9 samples; set it to 9" in out
    ok = CliRunner().invoke(app, ["dataset", "check", str(write_robomimic(tmp_path / "ok.hdf5", (4,)))])
    assert ok.exit_code == 0 and "robomimic HDF5, 1 demos, 4 samples" in ok.output


@pytest.mark.parametrize("damage, where, says", [
    ("no_data", "data", "no 'data' group (the file holds ['other']); robomimic's layout keeps every demo under"),
    ("no_actions", "data/demo_0/actions", "missing; every demo holds its (N, A) actions"),
    ("short_obs", "data/demo_0/obs/robot0_joint_pos", "has 2 rows, the demo 4 (num_samples / actions)"),
    ("num_samples", "data/demo_0", "num_samples is 7 but actions has 4 rows"),
    ("no_rate", "data", "env_args.env_kwargs.control_freq is None; it must be the control rate in Hz"),
])
def test_malformed_files_are_refused_naming_file_group_value_and_fix(tmp_path, damage, where, says):
    path = write_robomimic(tmp_path / "bad.hdf5", (4,), images=False, fps=None if damage == "no_rate" else FPS)
    with h5py.File(path, "r+") as f:
        if damage == "no_data":
            f.move("data", "other")
        elif damage == "no_actions":
            del f["data/demo_0/actions"]
        elif damage == "short_obs":
            del f["data/demo_0/obs/robot0_joint_pos"]
            f["data/demo_0/obs/robot0_joint_pos"] = np.zeros((2, 7))
        elif damage == "num_samples":
            f["data/demo_0"].attrs["num_samples"] = 7
    with pytest.raises(BakeError) as err:
        bake([path], tmp_path / "out", BakeConfig(control_space="as_recorded"))
    msg = str(err.value)
    assert str(path) in msg and f"{where}: {says}" in msg and "demoforge dataset check" in msg
    assert not (tmp_path / "out").exists() and not (tmp_path / ".out.bake-imports").exists()


def test_missing_proprioception_is_refused_with_the_keys_it_holds(tmp_path):
    path = write_robomimic(tmp_path / "noq.hdf5", (4,), images=False)
    with h5py.File(path, "r+") as f:
        del f["data/demo_0/obs/robot0_joint_pos"]
    with pytest.raises(BakeError, match=r"data/demo_0/obs lacks 'robot0_joint_pos' or 'joint_pos' \(arm joint "
                                        r"positions \[rad\]\); it holds \['object', 'robot0_gripper_qpos'\]. "
                                        r"Extract robosuite's proprioception with robomimic's "
                                        r"dataset_states_to_obs.py"):
        bake([path], tmp_path / "out", BakeConfig(control_space="as_recorded"))


def test_without_h5py_an_hdf5_input_names_the_extra(tmp_path, monkeypatch):
    path = write_robomimic(tmp_path / "x.hdf5", (3,), images=False)
    monkeypatch.setitem(sys.modules, "h5py", None)  # import h5py now raises ImportError
    with pytest.raises(DemoforgeError, match=r"x\.hdf5: reading or writing HDF5 needs h5py, which is not "
                                             r"installed; pip install 'demoforge\[hdf5\]'"):
        bake([path], tmp_path / "out", BakeConfig(control_space="as_recorded"))


def test_sources_whose_gripper_values_mean_different_things_are_not_baked_together(lift, tmp_path):
    closed = write_robomimic(tmp_path / "closed.hdf5", (4,), images=False)
    with h5py.File(closed, "r+") as f:
        del f["data/demo_0/obs/robot0_gripper_qpos"]
        f["data/demo_0/obs/gripper"] = np.zeros((4, 1))
    with pytest.raises(BakeError, match=r"gripper value is \{'quantity': 'closedness'.*'finger opening \[m\]'.*"
                                        r"one column cannot hold both"):
        bake([lift, closed], tmp_path / "out", BakeConfig(control_space="as_recorded", cams=()))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["closed.hdf5"]  # no import left beside OUT


def test_observations_that_fit_no_column_are_named_in_the_notes(tmp_path):
    path = write_robomimic(tmp_path / "depth.hdf5", (4,), images=False)
    with h5py.File(path, "r+") as f:
        f["data/demo_0/obs/agentview_depth"] = np.ones((4, 8, 8, 1), np.float32)
    out = bake([path], tmp_path / "out", BakeConfig(control_space="as_recorded", keep=("all",)))
    notes = json.loads((out / "meta/bake.json").read_text())["notes"]
    assert f"{path}: obs/agentview_depth fit no column of the import (not low-dimensional, not an RGB camera the " \
           "reader takes) and are not read" in notes
    assert "agentview_depth" not in " ".join(open_dataset(out).info.features)


@pytest.mark.parametrize("value, says", [
    (None, "has no env_args attribute; robomimic's layout stores the environment's metadata there as a JSON object"),
    ("{oops", "env_args is not JSON (Expecting property name"),
    ("[1, 2]", "env_args is list [1, 2], not a JSON object {env_name, env_type, env_kwargs}"),
])
def test_dataset_check_names_a_bad_env_args(tmp_path, value, says):
    from demoforge.dataset import check_dataset

    path = write_robomimic(tmp_path / "args.hdf5", (3,), images=False)
    with h5py.File(path, "r+") as f:
        del f["data"].attrs["env_args"]
        if value is not None:
            f["data"].attrs["env_args"] = value
    problems = check_dataset(path)
    assert [(p.code, p.file) for p in problems] == [("hdf5.env_args", "data")] and says in problems[0].message
