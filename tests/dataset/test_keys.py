"""The extras decoders: one way to read demoforge/<name> columns back."""

from __future__ import annotations

from demoforge.dataset.keys import (
    HISTOGRAM_PREFIX, camera_of, episode_extras, extra_column, image_key, is_extra_column, row_extra,
)

ROW = {
    "episode_index": 0,
    "demoforge/seed": "7",
    "demoforge/goal": '["(on a b)"]',
    "demoforge/failure": "null",
    "demoforge/look": None,  # absent in this episode
    HISTOGRAM_PREFIX + "observation.images.front": [[1, 2], [3, 4], [5, 6]],
    "videos/observation.images.front/from_timestamp": 0.0,
}


def test_episode_extras_decodes_records_and_leaves_histograms_out():
    assert episode_extras(ROW) == {"failure": None, "goal": ["(on a b)"], "seed": 7}


def test_row_extra_gives_the_default_for_absent_and_null_records():
    assert row_extra(ROW, "goal") == ["(on a b)"]
    assert row_extra(ROW, "look", "none") == "none"
    assert row_extra(ROW, "failure", {}) == {}
    assert row_extra(ROW, "missing") is None
    assert row_extra({"demoforge/seed": 7}, "seed") == 7  # already decoded


def test_names():
    assert extra_column("seed") == "demoforge/seed" and is_extra_column("demoforge/seed")
    assert not is_extra_column(HISTOGRAM_PREFIX + "x") and not is_extra_column("videos/x")
    assert image_key("front") == "observation.images.front" and camera_of(image_key("wrist")) == "wrist"
