"""relabel: failed roll-outs of a weak policy become successful expert episodes from the failure state."""

import json

import numpy as np
import pytest

from demoforge.dataset import check_dataset, open_dataset
from demoforge.policy import PolicyError, RolloutSettings, load_policy, rollout
from demoforge.policy.relabel import failure_tick, relabel


def test_failed_rollouts_become_expert_demonstrations_from_the_failure_state(pnp, tmp_path):
    rollout(load_policy("tests.policy.scripted:hold"), [pnp], tmp_path / "r", episodes=2, envs=2,
            settings=RolloutSettings(max_ticks=30), spec="hold")
    src_root = tmp_path / "r" / "dataset"
    summary = relabel(src_root, tmp_path / "l", envs=2)
    assert summary["failed"] == [0, 1] and summary["relabeled"] == 2 and summary["unreachable"] == []
    out = tmp_path / "l" / "dataset"
    assert check_dataset(out) == []
    src, new = open_dataset(src_root), open_dataset(out)
    for k in range(2):
        info = json.loads(new.episode(k)["demoforge/relabel"])
        assert info["episode"] == k and info["policy"] == "hold"
        assert info["tick"] == 29  # holding still: the last recorded state is still solvable
        start = src.read_episode(k, ["sim.state"])["sim.state"][info["tick"]]
        assert np.array_equal(new.read_episode(k, ["sim.state"])["sim.state"][0], start)
        assert json.loads(new.episode(k)["demoforge/outcome"]) == "success"
        assert json.loads(new.episode(k)["demoforge/plan"])  # the expert's executed steps
    assert failure_tick(src_root, 0) == 29


def test_a_folder_in_use_is_refused(expert_data, tmp_path):
    (tmp_path / "l").mkdir()
    (tmp_path / "l" / "x").write_text("")
    with pytest.raises(PolicyError, match="not empty"):
        relabel(expert_data, tmp_path / "l")


def test_successful_episodes_are_not_relabeled(expert_data, tmp_path):
    summary = relabel(expert_data, tmp_path / "l")
    assert summary["failed"] == [] and summary["relabeled"] == 0
    assert not (tmp_path / "l" / "dataset").exists()
