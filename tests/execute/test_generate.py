"""generate: determinism across env and worker counts, resume after a crash, the CLI,
checked datasets, and memory that does not grow with the episode count."""

import hashlib
import json
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.dataset import check_dataset, open_dataset
from demoforge.execute import ExecuteError, generate


def digest(root: Path) -> dict[str, str]:
    """sha256 of every file under `root`, by relative path."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _outputs(out: Path) -> dict[str, str]:
    return {k: v for k, v in digest(out).items() if k.startswith(("success/", "failure/")) or k == "summary.json"}


def test_output_is_byte_identical_for_any_env_count(pnp, tmp_path):
    a = generate(pnp, tmp_path / "a", episodes_per_problem=2, envs=1, seed=4)
    b = generate(pnp, tmp_path / "b", episodes_per_problem=2, envs=3, seed=4)
    assert a.episodes == b.episodes == 4
    assert _outputs(tmp_path / "a") == _outputs(tmp_path / "b")
    assert check_dataset(a.roots["success"]) == []
    reader = open_dataset(a.roots["success"])
    # canonical order: problem order, then episode index
    order = [(reader.episode(i)["demoforge/problem"], json.loads(reader.episode(i)["demoforge/seed"])["episode"])
             for i in reader.episode_indices]
    assert order == sorted(order)
    meta = a.roots["success"] / "meta/demoforge"
    assert {p.name for p in meta.iterdir()} >= {"controller.json", "vocab.json", "provenance.json", "scenes"}
    assert json.loads((meta / "controller.json").read_text())["mode"] == "joint_position"
    assert reader.info.robot_type == "panda"  # the robot card's name, for loaders that key on it


def test_different_seeds_differ(pnp, tmp_path):
    a = generate(pnp[:1], tmp_path / "a", episodes_per_problem=1, seed=1)
    b = generate(pnp[:1], tmp_path / "b", episodes_per_problem=1, seed=2)
    assert digest(a.roots["success"]) != digest(b.roots["success"])


@pytest.mark.slow
def test_output_is_byte_identical_for_one_or_two_workers(pnp, tmp_path):
    generate(pnp, tmp_path / "a", episodes_per_problem=2, envs=1, workers=1, seed=4)
    generate(pnp, tmp_path / "b", episodes_per_problem=2, envs=3, workers=2, seed=4)
    assert _outputs(tmp_path / "a") == _outputs(tmp_path / "b")


class Crash(Exception):
    pass


def test_a_killed_run_resumes_without_losing_or_repeating_episodes(pnp, tmp_path):
    reference = generate(pnp, tmp_path / "ref", episodes_per_problem=2, envs=2, seed=9)
    calls = []

    def crash(i, ep, step, attempt):
        calls.append(step)
        if len(calls) == 5:  # in the third episode: two are durable in their shards
            raise Crash

    with pytest.raises(Crash):
        generate(pnp, tmp_path / "run", episodes_per_problem=2, envs=1, seed=9, after_skill=crash)
    assert not (tmp_path / "run/success").exists()
    resumed = generate(pnp, tmp_path / "run", episodes_per_problem=2, envs=1, seed=9)
    assert resumed.episodes == reference.episodes == 4
    assert _outputs(tmp_path / "run") == _outputs(tmp_path / "ref")


def test_a_run_folder_refuses_other_arguments(pnp, tmp_path):
    generate(pnp[:1], tmp_path / "run", episodes_per_problem=1, seed=0)
    with pytest.raises(ExecuteError, match="other inputs"):
        generate(pnp[:1], tmp_path / "run", episodes_per_problem=1, seed=1)
    with pytest.raises(ExecuteError, match="episodes_per_problem"):
        generate(pnp[:1], tmp_path / "x", episodes_per_problem=0)


def test_cli_prints_progress_and_summary(pnp, tmp_path):
    result = CliRunner().invoke(app, ["generate", str(pnp[0]), "--episodes-per-problem", "2", "--envs", "2",
                                      "--seed", "0", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert "[2/2]" in result.output and "episodes/s" in result.output and "success 100.0%" in result.output
    assert "2/2 episodes succeeded" in result.output
    assert "failure causes by kind: none" in result.output
    quiet = CliRunner().invoke(app, ["generate", str(pnp[0]), "--episodes-per-problem", "2", "--envs", "2",
                                     "--seed", "0", "--out", str(tmp_path / "quiet"), "--quiet"])
    assert quiet.exit_code == 0, quiet.output
    assert "/2]" not in quiet.output and "episodes/s" not in quiet.output and ": done" not in quiet.output
    assert "2/2 episodes succeeded" in quiet.output
    bad = CliRunner().invoke(app, ["generate", str(tmp_path / "nope.pddl"), "--episodes-per-problem", "1",
                                   "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "nope.pddl" in bad.output


@pytest.mark.slow
def test_memory_does_not_grow_with_the_episode_count(rotate, tmp_path, monkeypatch):
    """Memory held after each episode is written, over 10 episodes: an episode's rows
    (~0.5 MB for these) are not kept. What remains per episode is the writer's in-memory
    episode record (per-feature statistics, a few tens of KB)."""
    gen = sys.modules["demoforge.execute.shards"]
    add, held = gen.ShardWriters.add, []

    def spy(self, result):
        add(self, result)
        held.append(tracemalloc.get_traced_memory()[0])

    monkeypatch.setattr(gen.ShardWriters, "add", spy)
    generate(rotate[:1], tmp_path / "warm", episodes_per_problem=1, seed=0)  # caches, imports
    tracemalloc.start()
    try:
        generate(rotate[:1], tmp_path / "run", episodes_per_problem=10, seed=0)
    finally:
        tracemalloc.stop()
    per_episode = (held[-1] - held[2]) / (len(held) - 3)
    assert per_episode < 100_000, held


def test_cli_takes_a_randomization_spec(pnp, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("kp_scale: [0.9, 1.1]\n")
    result = CliRunner().invoke(app, ["generate", str(pnp[0]), "--episodes-per-problem", "1", "--out",
                                      str(tmp_path / "run"), "--randomization", str(spec),
                                      "--randomize", "spawn_jitter=0.01"])
    assert result.exit_code == 0, result.output
    draw = json.loads(open_dataset(tmp_path / "run/success").episode(0)["demoforge/randomization"])
    assert set(draw) == {"schema", "kp_scale", "spawn_offset"}
    bad = CliRunner().invoke(app, ["generate", str(pnp[0]), "--episodes-per-problem", "1", "--out",
                                   str(tmp_path / "x"), "--randomize", "kp_scale=[2,1]"])
    assert bad.exit_code == 2 and "kp_scale" in bad.output


def test_scene_packages_are_inputs_too(pnp, tmp_path):
    from demoforge.scenes import build_scene_package

    from .test_expert_loop import _replays_exactly

    build_scene_package(pnp[:1], reset_states=2, profiles=1, seed=0, out=tmp_path / "pkg")
    summary = generate([tmp_path / "pkg"], tmp_path / "run", episodes_per_problem=3, envs=2, seed=0)
    root = summary.roots["success"]
    assert summary.successes == 3 and check_dataset(root) == []
    reader = open_dataset(root)
    used = [json.loads(reader.episode(i)["demoforge/env_package"]) for i in reader.episode_indices]
    assert [u["reset_state"] for u in used] == [0, 1, 0] and all(u["profile"] == 0 for u in used)
    _replays_exactly(root, 2)


def test_tally_of_an_interrupted_item_counts_failure_kinds(tmp_path):
    from demoforge.dataset import DatasetWriter, Feature
    from demoforge.execute.shards import ShardWriters, tally_of

    feats = {"observation.state": Feature("float32", (2,))}
    for split, extras in (("success", [{"seed": 0}]), ("failure", [{"failure": {"kind": "ik"}},
                                                                    {"failure": {"kind": "ik"}}])):
        w = DatasetWriter.create(tmp_path / split, fps=10, features=feats)
        for extra in extras:
            w.add_episode({"observation.state": np.zeros((3, 2))}, task="t", extra=extra)
        w.__exit__(RuntimeError, None, None)  # killed: staging kept for a resume
    shards = ShardWriters(tmp_path, layout=None)
    t = tally_of(shards)
    assert (t.success, t.failure, t.kinds) == (1, 2, {"ik": 2})
    shards.close()


def test_goal_check_without_fast_downward_asks_pymimir_alone(monkeypatch):
    """Fast Downward is an extra (`fd`): without it the goal check still runs, on pymimir only."""
    from demoforge.errors import PlanningError
    from demoforge.execute.problems import goal_planner

    def missing():
        raise PlanningError("Fast Downward is not installed; install demoforge[fd] (up-fast-downward)")

    monkeypatch.setattr("demoforge.tasks.fast_downward.downward_binary", missing)
    assert goal_planner().name == "pymimir"
    monkeypatch.undo()
    assert goal_planner().name == "fallback"


def test_a_shard_killed_in_its_first_episode_and_never_added_to_is_no_dataset(tmp_path):
    """A kill inside a split's first episode leaves its staging without episodes; if no episode
    of that split comes after the resume, the item finalizes without it (a writer refuses to
    finalize an empty dataset)."""
    from demoforge.dataset import DatasetWriter, Feature, open_dataset
    from demoforge.execute.shards import ProblemTally, ShardWriters

    feats = {"observation.state": Feature("float32", (2,))}
    for split, n in (("success", 1), ("failure", 0)):
        w = DatasetWriter.create(tmp_path / split, fps=10, features=feats)
        for _ in range(n):
            w.add_episode({"observation.state": np.zeros((3, 2))}, task="t")
        w.__exit__(RuntimeError, None, None)  # killed: staging kept for a resume
    shards = ShardWriters(tmp_path, layout=None)
    shards.finalize(ProblemTally(success=1))
    assert open_dataset(tmp_path / "success").num_episodes == 1
    assert not any((tmp_path / "failure").iterdir())
