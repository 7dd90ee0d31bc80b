"""The smoke pipeline's final dataset (rendered, baked) loads in the REAL lerobot 0.6.1 with its
video decoded: frame counts, state and action match what we wrote, frames match our decode;
the annotated split's goal.action, goal.position and goal.visible come back as written."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from demoforge.dataset import check_dataset, open_dataset
from demoforge.pipeline import resolve_config, run_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance"))
from lerobot_harness import lerobot_python_or_skip, mean_abs_diff01, probe_many, require_dump  # noqa: E402

pytestmark = [pytest.mark.conformance, pytest.mark.slow]


def test_smoke_pipeline_loads_in_real_lerobot(tmp_path):
    python = lerobot_python_or_skip()
    config = resolve_config(None, {"experiment_id": "smoke", "out_dir": str(tmp_path), "smoke_test": True,
                                   "looks": ["plain"], "control_space": "joint_target",
                                   "skip": ["doctor"]})
    result = run_pipeline(config, echo=lambda s: None)
    root = result.final
    assert check_dataset(root) == []
    annotated = result.run_dir / "annotated"
    dump, dump_annotated = probe_many(python, [root, annotated], tmp_path / "probe")
    dump, dump_annotated = require_dump(dump), require_dump(dump_annotated)
    ann = open_dataset(annotated)
    for key in ("goal.action", "goal.position", "goal.visible"):
        want = np.concatenate([ann.read_episode(i, [key])[key] for i in ann.episode_indices])
        np.testing.assert_array_equal(dump_annotated.columns[key].reshape(want.shape), want)
    ds = open_dataset(root)
    assert dump.meta["num_episodes"] == ds.info.total_episodes and dump.meta["num_frames"] == ds.info.total_frames
    for key in ("observation.state", "action"):
        want = np.concatenate([ds.read_episode(i, [key])[key] for i in ds.episode_indices])
        np.testing.assert_array_equal(dump.columns[key].reshape(want.shape), want)
    key = "observation.images.front"
    got = dump.columns[key]  # the probe returns lerobot's frames as (T, H, W, 3) uint8
    want = np.concatenate([ds.read_video(i, key) for i in ds.episode_indices])
    assert got.shape == want.shape
    assert mean_abs_diff01(got, want) < 0.01
