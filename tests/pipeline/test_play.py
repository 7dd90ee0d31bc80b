"""Play data: goals sampled from the reached state, chained without resets in long episodes."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from demoforge.dataset import check_dataset, open_dataset
from demoforge.execute import ExecuteError
from demoforge.pipeline import config_from_dict, run_pipeline
from demoforge.pipeline.play import generate_play, ground_steps, sample_goal
from demoforge.pipeline.provenance import dataset_hash
from demoforge.tasks import generate_family, load_task, write_tasks


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    paths = write_tasks(generate_family("stack_three", count=1, seed=0), tmp_path_factory.mktemp("tasks"))
    return [p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl"][0]


def test_sampled_goals_are_reachable_new_and_seeded(problem):
    from demoforge.tasks import run_plan  # noqa: F401  (the simulator the walk uses)

    task = load_task(problem)
    init = frozenset(task.init)
    goals = [sample_goal(task, init, np.random.default_rng(s)) for s in range(6)]
    assert goals[0] == sample_goal(task, init, np.random.default_rng(0))
    for g in goals:
        assert g and all(a not in init for a in g)
        assert all(a[0] in ("on", "on_table") for a in g)
    assert len({tuple(g) for g in goals}) > 1
    assert all(s.action == "pick-up" for s in ground_steps(task, init))


@pytest.mark.slow
def test_play_episodes_chain_goals_and_do_not_depend_on_envs(problem, tmp_path):
    a = generate_play([problem], tmp_path / "a", episodes_per_problem=2, goals=3, envs=2, seed=0)
    b = generate_play([problem], tmp_path / "b", episodes_per_problem=2, goals=3, envs=1, seed=0)
    assert a.episodes == 2
    for split in ("success", "failure"):
        assert (a.roots[split] is None) == (b.roots[split] is None)
        if a.roots[split] is not None:
            assert check_dataset(a.roots[split]) == []
            assert dataset_hash(a.roots[split]) == dataset_hash(b.roots[split])
    ds = open_dataset(a.roots["success"])
    for i in ds.episode_indices:
        row = ds.episode(i)
        play = json.loads(row["demoforge/play"])
        assert len(play) == 3 and play[0]["ticks"][0] == 0 and play[-1]["ticks"][1] == row["length"]
        assert all(p["ticks"][1] == q["ticks"][0] for p, q in zip(play, play[1:]))
        assert len({tuple(p["goal"]) for p in play[:2]}) == 2  # the goal changes over time
        assert row["tasks"][0] == "; then ".join(p["words"] for p in play)
        plan = json.loads(row["demoforge/plan"])
        assert plan[-1]["ticks"][1] <= row["length"] and len(plan) > 2


class Crash(Exception):
    pass


@pytest.mark.slow
def test_a_killed_play_run_keeps_its_finished_episodes_and_resumes_to_the_same_bytes(problem, tmp_path, monkeypatch):
    reference = generate_play([problem], tmp_path / "ref", episodes_per_problem=3, goals=2, envs=1, seed=1)
    shards = sys.modules["demoforge.execute.shards"]
    add, written = shards.ShardWriters.add, []

    def add_then_die(self, result):
        add(self, result)
        written.append(result.episode)
        if len(written) == 2:
            raise Crash  # two episodes durable, the third never starts

    monkeypatch.setattr(shards.ShardWriters, "add", add_then_die)
    with pytest.raises(Crash):
        generate_play([problem], tmp_path / "run", episodes_per_problem=3, goals=2, envs=1, seed=1)
    monkeypatch.setattr(shards.ShardWriters, "add", add)
    rerun = []
    monkeypatch.setattr(shards.ShardWriters, "add", lambda self, r: (rerun.append(r.episode), add(self, r)))
    resumed = generate_play([problem], tmp_path / "run", episodes_per_problem=3, goals=2, envs=1, seed=1)
    assert rerun == [2]  # only the episode that had not finished runs again
    assert resumed.episodes == reference.episodes == 3
    for split in ("success", "failure"):
        assert (resumed.roots[split] is None) == (reference.roots[split] is None)
        if reference.roots[split] is not None:
            assert dataset_hash(resumed.roots[split]) == dataset_hash(reference.roots[split])
    with pytest.raises(ExecuteError, match="other inputs"):
        generate_play([problem], tmp_path / "run", episodes_per_problem=3, goals=3, envs=1, seed=1)


@pytest.mark.slow
def test_play_through_the_pipeline(tmp_path):
    c = config_from_dict({"experiment_id": "play", "out_dir": str(tmp_path), "problems": 1, "episodes_per_problem": 1,
                          "play": True, "play_goals": 2, "reset_states": 2, "skip": ["render", "bake", "doctor"]})
    result = run_pipeline(c, echo=lambda s: None)
    train = result.run_dir / "dataset" / "train"
    assert check_dataset(train) == []
    assert len(json.loads(open_dataset(train).episode(0)["demoforge/play"])) == 2
