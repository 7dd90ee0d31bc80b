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
    goals = [sample_goal(task, init, np.random.default_rng(s)) for s in range(40)]
    assert goals[0] == sample_goal(task, init, np.random.default_rng(0))
    for g in goals:
        assert g and any(a not in init for a in g)
        # every atom is new, but the face of a block whose yaw is new (a turn, not any tip)
        turned = {a[1] for a in g if a[0] == "yaw"}
        assert all(a not in init for a in g if not (a[0] == "face_up" and a[1] in turned))
        assert all(any(a[0] == "face_up" and a[1] == b for a in g) for b in turned)
        assert all(a[0] in ("on", "on_table", "face_up", "yaw") for a in g)
    assert len({tuple(g) for g in goals}) > 1
    # goals of every kind the blocks' operators reach: stack, flip and rotate
    assert {a[0] for g in goals for a in g} == {"on", "face_up", "yaw"}
    assert {s.action for s in ground_steps(task, init)} == {"pick-up", "flip", "rotate"}


def test_sampled_goals_place_blocks_in_regions(tmp_path):
    paths = write_tasks(generate_family("pnp", count=1, seed=0), tmp_path)
    task = load_task([p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl"][0])
    init = frozenset(task.init)
    kinds = {a[0] for s in range(40) for a in sample_goal(task, init, np.random.default_rng(s))}
    assert kinds == {"in_region", "face_up", "yaw"}


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
    # seed 1: seed 0's one episode samples a flip of a block put down beside the tower, whose tip
    # hits the tower on every retry (a flip-skill limit; this test is about the pipeline's plumbing)
    c = config_from_dict({"experiment_id": "play", "out_dir": str(tmp_path), "problems": 1, "episodes_per_problem": 1,
                          "seed": 1, "play": True, "play_goals": 2, "reset_states": 2,
                          "skip": ["render", "bake", "doctor"]})
    result = run_pipeline(c, echo=lambda s: None)
    train = result.run_dir / "dataset" / "train"
    assert check_dataset(train) == []
    assert len(json.loads(open_dataset(train).episode(0)["demoforge/play"])) == 2


@pytest.fixture(scope="module")
def two_families(tmp_path_factory):
    """A pnp problem (one block, two regions) and an unstack problem (three blocks): between them
    every operator of the blocks domain applies; their physics states differ in size."""
    out = []
    for family in ("pnp", "unstack"):
        paths = write_tasks(generate_family(family, count=1, seed=0), tmp_path_factory.mktemp(family))
        out += [p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl"]
    return out


@pytest.mark.slow
def test_play_goals_use_every_operator_of_the_domain(two_families, tmp_path):
    summary = generate_play(two_families, tmp_path / "play", episodes_per_problem=2, goals=3, seed=4)
    assert summary.successes == summary.episodes == 4
    root = summary.roots["success"]
    assert check_dataset(root) == []
    ds = open_dataset(root)
    sampled = set()
    for i in ds.episode_indices:
        play = json.loads(ds.episode(i)["demoforge/play"])
        assert len(play) == 3
        sampled |= {op for segment in play[1:] for op in segment["operators"]}  # the goals play sampled
    assert sampled == set(load_task(two_families[0]).index.actions) == {
        "pick-up", "put-down", "stack", "unstack", "flip", "rotate", "place-in-region"}


def test_generate_play_cli_refuses_play_goals_without_play(two_families, tmp_path):
    from typer.testing import CliRunner

    from demoforge.cli.main import app

    result = CliRunner().invoke(app, ["generate", str(two_families[0]), "--episodes-per-problem", "1",
                                      "--play-goals", "2", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "add --play" in result.output
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_generate_play_cli_writes_play_episodes_independent_of_workers(two_families, tmp_path):
    from typer.testing import CliRunner

    from demoforge.cli.main import app

    for name, workers in (("a", "1"), ("b", "2")):
        result = CliRunner().invoke(app, ["generate", *map(str, two_families), "--episodes-per-problem", "1",
                                          "--play", "--play-goals", "2", "--seed", "1", "--workers", workers,
                                          "--out", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
    for split in ("success", "failure"):
        a, b = tmp_path / "a" / split, tmp_path / "b" / split
        assert a.exists() == b.exists()
        if a.exists():
            assert dataset_hash(a) == dataset_hash(b)
    ds = open_dataset(tmp_path / "a" / "success")
    assert [len(json.loads(ds.episode(i)["demoforge/play"])) for i in ds.episode_indices] == [2, 2]
    run = json.loads((tmp_path / "a" / "run.json").read_text())
    assert run["expert"] == {"class": "demoforge.pipeline.play.PlayLoop", "options": {"goals": 2}}


def test_play_keeps_its_own_goal_and_result_hooks():
    from demoforge.execute import EpisodeHooks
    from demoforge.pipeline.play import PlayLoop

    with pytest.raises(ExecuteError, match=r"hooks \['on_result'\] are play's own"):
        PlayLoop([], None, num_envs=1, episodes=[], goals=2, seed=0,
                   hooks=EpisodeHooks(on_result=lambda episode, result: result))
