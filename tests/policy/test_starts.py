"""eval --start: episodes start at tick 0, a seeded random tick or every K-th tick of the
recorded episodes, in the exact recorded state of that tick; the summary gives each side by side."""

import json

import numpy as np
import pytest

from demoforge.dataset import open_dataset
from demoforge.policy import PolicyError, RolloutSettings, load_policy
from demoforge.policy.evaluate import evaluate_from_dataset
from demoforge.policy.starts import FIRST, Start, goal_tick, parse_starts, start_ticks


def test_parse_starts():
    assert parse_starts("first") == (FIRST,)
    assert parse_starts("first, random,every:30") == (FIRST, Start("random"), Start("every", 30))
    for bad in ("last", "every", "every:0", "every:x", "random:3", "first,first", ""):
        with pytest.raises(PolicyError, match="--start"):
            parse_starts(bad)


def test_start_ticks_lie_before_the_goal_and_repeat_with_the_seed():
    starts = parse_starts("first,random,every:40")
    ticks = start_ticks(starts, length=300, goal_tick=130, rng=np.random.default_rng(5))
    assert ticks[0] == (0, "first") and [t for t, lab in ticks if lab == "every:40"] == [0, 40, 80, 120]
    randoms = [start_ticks(starts[1:2], length=300, goal_tick=130, rng=np.random.default_rng(s))[0][0]
               for s in range(200)]
    assert min(randoms) >= 0 and max(randoms) < 130 and len(set(randoms)) > 50
    assert start_ticks(starts, length=300, goal_tick=130, rng=np.random.default_rng(5)) == ticks
    assert start_ticks(starts[1:2], length=10, goal_tick=None, rng=np.random.default_rng(0))[0][0] < 10
    assert start_ticks(starts[1:2], length=10, goal_tick=0, rng=np.random.default_rng(0)) == [(0, "random")]


def test_goal_tick_is_the_first_row_where_every_goal_atom_holds():
    symbols = np.array([[0, 1, 0], [1, 0, 0], [1, 0, 1], [1, 1, 1]], bool)
    vocab = ["(a)", "(b)", "(c)"]
    assert goal_tick(symbols, vocab, ("(a)", "(c)")) == 2
    assert goal_tick(symbols, vocab, ("(b)",)) == 0
    assert goal_tick(symbols, vocab, ("(d)",)) is None
    assert goal_tick(symbols[:2], vocab, ("(c)",)) is None


def test_the_expert_completes_from_random_and_strided_start_frames(expert_data, tmp_path):
    out = tmp_path / "e"
    summary = evaluate_from_dataset(load_policy("expert"), expert_data, out, spec="expert", envs=2, seed=3,
                                    starts=parse_starts("first,random,every:90"),
                                    settings=RolloutSettings(max_ticks=900))
    table = summary["by_start"]
    assert list(table) == ["first", "random", "every:90"]
    assert table["first"]["episodes"] == 2 and table["random"]["episodes"] == 2 and table["every:90"]["episodes"] >= 4
    assert all(t["success_rate"] == 1.0 for t in table.values()), table
    assert summary["completion_ratio_mean_random"] == table["random"]["mean_completion"]
    src, ev = open_dataset(expert_data), open_dataset(out / "dataset")
    ticks = []
    for i in ev.episode_indices:
        source = json.loads(ev.episode(i)["demoforge/eval_source"])
        recorded = src.read_episode(source["episode"], ["sim.state"])["sim.state"]
        assert np.array_equal(ev.read_episode(i, ["sim.state"])["sim.state"][0], recorded[source["tick"]])
        ticks.append((source["tick"], tuple(source["starts"])))
    assert (0, ("first", "every:90")) in ticks  # tick 0 runs once for both kinds
    assert any(t > 0 for t, names in ticks if names == ("random",))
    assert "## By start frame" in (out / "SUMMARY.md").read_text()
    again = evaluate_from_dataset(load_policy("expert"), expert_data, tmp_path / "again", spec="expert", seed=3,
                                  starts=parse_starts("first,random,every:90"), settings=RolloutSettings(max_ticks=900))
    assert again["by_start"] == table
    data = sorted((out / "dataset" / "data").rglob("*.parquet"))
    assert data and [f.read_bytes() for f in data] == \
        [(tmp_path / "again" / "dataset" / f.relative_to(out / "dataset")).read_bytes() for f in data]
