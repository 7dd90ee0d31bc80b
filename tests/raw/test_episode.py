"""EpisodeRecord and FailureCause: what the writer stores reads back as the same record."""

from __future__ import annotations

import numpy as np
import pytest

from demoforge.dataset import DatasetWriter, Feature, open_dataset
from demoforge.raw import EpisodeRecord, FailureCause, FailureKind, RawError, own_states

SEED = {"run_seed": 3, "entropy": [3, 77], "spawn_key": [1], "episode": 1, "streams": ["scene"]}
DRAW = {"problem": "p", "block_size_m": {"a": 0.04}, "friction": 0.8}


def _failed() -> EpisodeRecord:
    return EpisodeRecord(
        "p", SEED, DRAW, None, {"attempts": 1, "poses": {}}, {"gravity": [0, 0, -9.7]},
        goal=("(on a b)",), plan=({"step": 0, "operator": "pick-up", "args": ["a"], "ticks": [0, 9]},),
        retries=({"step": 0, "attempts": [{"kind": "ik"}]},), replans={"count": 1, "why": [{"step": 0}]},
        outcome="failure", failure=FailureCause(FailureKind.COLLISION, "hit b", "stack", ("a", "b"), 1, "(on a b)"),
        more={"look": {"look": "plain"}})


def test_record_round_trips_through_a_dataset(tmp_path):
    records = [_failed(), EpisodeRecord("q", SEED, DRAW, outcome="success")]
    feats = {"observation.state": Feature("float32", (2,))}
    with DatasetWriter.create(tmp_path / "ds", fps=10, features=feats) as w:
        for r in records:
            w.add_episode({"observation.state": np.zeros((3, 2), np.float32)}, task="t", extra=r.to_extras())
    ds = open_dataset(tmp_path / "ds")
    back = [EpisodeRecord.from_row(ds.episode(i)) for i in ds.episode_indices]
    assert back == records
    assert back[0].failure.kind is FailureKind.COLLISION and not back[0].success and back[1].success


def test_extras_keep_the_recorded_json_shape():
    extras = _failed().to_extras()
    assert extras["failure"] == {"skill": "stack", "args": ["a", "b"], "step": 1, "predicate": "(on a b)",
                                 "kind": "collision", "message": "hit b"}
    assert extras["goal"] == ["(on a b)"] and extras["look"] == {"look": "plain"}
    assert EpisodeRecord.from_extras(extras) == _failed()


def test_a_row_without_the_replay_records_is_refused_with_the_columns():
    with pytest.raises(RawError, match="demoforge/problem, demoforge/scene_draw"):
        EpisodeRecord.from_row({"episode_index": 4, "demoforge/seed": "{}"})


def test_an_unknown_failure_kind_is_refused_with_the_kinds():
    with pytest.raises(RawError, match="'melted'.*planning"):
        FailureCause.from_json({"kind": "melted", "message": "?"})


def test_more_may_not_shadow_a_field():
    with pytest.raises(RawError, match="outcome"):
        EpisodeRecord("p", SEED, DRAW, more={"outcome": "success"}).to_extras()


def test_own_states_cuts_an_episode_to_its_width_and_refuses_damaged_padding():
    rows = np.zeros((3, 6))
    rows[:, :4] = np.arange(12).reshape(3, 4) + 1.0
    narrow = EpisodeRecord("p", SEED, DRAW, sim_state_width=4)
    np.testing.assert_array_equal(own_states(rows, narrow), rows[:, :4])
    np.testing.assert_array_equal(own_states(rows, EpisodeRecord("p", SEED, DRAW)), rows)  # no width: the row
    assert EpisodeRecord.from_extras(narrow.to_extras()).sim_state_width == 4
    with pytest.raises(RawError, match="non-zero values past the episode's width 3"):
        own_states(rows, EpisodeRecord("p", SEED, DRAW, sim_state_width=3))
    with pytest.raises(RawError, match="sim_state_width 7 is not a width in 1..6"):
        own_states(rows, EpisodeRecord("p", SEED, DRAW, sim_state_width=7))
