"""Bake a raw dataset written by the real execution stage (`demoforge.execute.generate`)."""

import json
from pathlib import Path

import numpy as np
import pytest

from demoforge.convert import BakeConfig, bake, read_episode
from demoforge.dataset import open_dataset

PROBLEM = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "stack_three-all-0000.pddl"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from demoforge.execute.generate import generate

    out = tmp_path_factory.mktemp("execute") / "run"
    summary = generate([PROBLEM], out, episodes_per_problem=1, seed=0)
    assert summary.roots["success"] is not None
    return out


def test_every_convention_of_an_executed_episode(run, tmp_path):
    src = open_dataset(run / "success")
    raw = src.read_episode(0, ["observation.state", "action", "raw_command"])
    for convention, rate in (("joint_target", 60), ("joint_vel", 15), ("joint_pos", 30), ("raw_cmd", 20)):
        out = bake([run], tmp_path / convention, BakeConfig(convention=convention, control_freq=rate))
        got = open_dataset(out).read_episode(0)
        stride = 60 // rate
        np.testing.assert_array_equal(got["observation.state"], raw["observation.state"][::stride])
        np.testing.assert_array_equal(got["raw_command"], raw["raw_command"][::stride])
        if convention == "joint_target":
            np.testing.assert_array_equal(got["action"], raw["action"])
        if convention == "joint_vel":
            q = raw["observation.state"][::stride, :7].astype(np.float64)
            np.testing.assert_allclose(got["action"][:-1, :7], np.diff(q, axis=0) * rate, rtol=1e-5, atol=1e-5)
        stamp = json.loads((out / "meta/bake.json").read_text())
        assert stamp["control_law"]["mode"] == "joint_position" and stamp["gripper"]["quantity"] == "closedness"


def test_filter_idle_on_an_executed_episode_drops_only_dead_ticks(run, tmp_path):
    ep = read_episode(open_dataset(run / "success"), 0, objects=True)
    assert ep.objects.shape[0] == ep.length and ep.objects.shape[1] % 7 == 0 and ep.objects.shape[1] >= 21
    out = bake([run], tmp_path / "idle", BakeConfig(convention="joint_pos", filter_idle=True))
    record = json.loads((out / "meta/bake.json").read_text())["sources"][0]["episodes"][0]
    assert 0 < record["idle_dropped"] < ep.length // 10
    assert record["ticks_out"] == ep.length - record["idle_dropped"] == open_dataset(out).num_frames
