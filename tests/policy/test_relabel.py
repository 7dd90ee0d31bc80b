"""relabel: failed roll-outs of a weak policy become successful expert episodes from the failure state."""

import json

import numpy as np
import pytest

from demoforge.dataset import check_dataset, open_dataset
from demoforge.policy import PolicyError, RolloutSettings, load_policy, rollout
from demoforge.policy import relabel as relabel_module
from demoforge.policy.relabel import failure_tick, relabel
from tests.adversarial.test_kills import files


def test_failed_rollouts_become_expert_demonstrations_from_the_failure_state(pnp, tmp_path):
    rollout(load_policy("tests.policy.scripted:hold"), [pnp], tmp_path / "r", episodes=2, envs=2,
            settings=RolloutSettings(max_ticks=30), spec="hold")
    src_root = tmp_path / "r" / "dataset"
    events = []
    summary = relabel(src_root, tmp_path / "l", envs=2, progress=events.append)
    assert summary["failed"] == [0, 1] and summary["relabeled"] == 2 and summary["unreachable"] == []
    eps = [e for e in events if e.kind == "episode"]
    assert [(e.stage, e.done, e.total, e.success) for e in eps] == [("relabel", 1, 2, True), ("relabel", 2, 2, True)]
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


def test_a_relabel_killed_between_its_dataset_and_its_summary_is_finished_by_its_rerun(pnp, tmp_path, monkeypatch):
    rollout(load_policy("tests.policy.scripted:hold"), [pnp], tmp_path / "r", episodes=1,
            settings=RolloutSettings(max_ticks=30), spec="hold")
    summary = relabel(tmp_path / "r" / "dataset", tmp_path / "whole")
    write = relabel_module.write_json_atomic

    def killed(path, data):
        if path == tmp_path / "l" / "summary.json":
            raise KeyboardInterrupt  # the kill: the dataset is published, its work folder still there
        write(path, data)

    monkeypatch.setattr(relabel_module, "write_json_atomic", killed)
    with pytest.raises(KeyboardInterrupt):
        relabel(tmp_path / "r" / "dataset", tmp_path / "l")
    assert (tmp_path / "l" / "dataset").is_dir() and not (tmp_path / "l" / "summary.json").exists()
    monkeypatch.setattr(relabel_module, "write_json_atomic", write)
    assert relabel(tmp_path / "r" / "dataset", tmp_path / "l") == summary  # the same command finishes it
    assert files(tmp_path / "l") == files(tmp_path / "whole")


def test_a_folder_in_use_is_refused(expert_data, tmp_path):
    (tmp_path / "l").mkdir()
    (tmp_path / "l" / "x").write_text("")
    with pytest.raises(PolicyError, match="not empty"):
        relabel(expert_data, tmp_path / "l")


def test_successful_episodes_are_not_relabeled(expert_data, tmp_path):
    summary = relabel(expert_data, tmp_path / "l")
    assert summary["failed"] == [] and summary["relabeled"] == 0
    assert not (tmp_path / "l" / "dataset").exists()


@pytest.fixture(scope="module")
def cut_expert(pnp, tmp_path_factory):
    """Expert roll-outs cut off at 130 ticks (of the 197 the expert takes): the block is in the
    hand, the goal not reached."""
    out = tmp_path_factory.mktemp("cut") / "r"
    summary = rollout(load_policy("expert"), [pnp], out, episodes=1, spec="expert",
                      settings=RolloutSettings(max_ticks=130))
    assert summary["overall"]["success_rate"] == 0.0
    return out / "dataset"


def atoms_at(root, k, tick):
    reader = open_dataset(root)
    names = json.loads((root / "meta" / "demoforge" / "vocab.json").read_text())["atoms"]
    row = reader.read_episode(k, ["symbolic.state"])["symbolic.state"][tick]
    return {names[i] for i in np.flatnonzero(row)}


def test_relabel_from_a_mid_task_state_finishes_the_task(cut_expert, tmp_path):
    summary = relabel(cut_expert, tmp_path / "l")
    assert summary["relabeled"] == 1 and summary["starts"] == [{"episode": 0, "tick": 129}]
    assert "(holding white)" in atoms_at(cut_expert, 0, 129)
    new = open_dataset(tmp_path / "l" / "dataset")
    assert [p["operator"] for p in json.loads(new.episode(0)["demoforge/plan"])] == ["place-in-region"]
    assert json.loads(new.episode(0)["demoforge/outcome"]) == "success"


def test_the_failure_state_is_the_last_one_the_planner_can_still_solve(cut_expert, monkeypatch):
    import sys

    mod = sys.modules["demoforge.policy.relabel"]
    real = mod.make_planner

    class NoHolding:  # a planner that finds holding the block hopeless
        def __init__(self, *a):
            self.inner = real(*a)

        def plan(self, task, *, state, time_budget_s):
            if ("holding", "white") in state:
                return type("R", (), {"solved": False})()
            return self.inner.plan(task, state=state, time_budget_s=time_budget_s)

    monkeypatch.setattr(mod, "make_planner", NoHolding)
    tick = failure_tick(cut_expert, 0)
    assert tick is not None and tick < 129
    assert "(holding white)" not in atoms_at(cut_expert, 0, tick)
    assert "(holding white)" in atoms_at(cut_expert, 0, tick + 1)  # the last solvable state before it went wrong
