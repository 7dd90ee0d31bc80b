"""Baked depth and segmentation maps loaded by the REAL lerobot 0.6.1, at the native rate
(packets copied) and at 15 Hz (re-encoded losslessly): lerobot's depth is our depth (to its
whole-millimetre output) and within 1.5 mm of the renderer's over the working range; its
segmentation frames are our colours exactly, which name the renderer's instance ids."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from demoforge.convert import BakeConfig, bake
from demoforge.dataset import open_dataset
from lerobot_harness import probe_many, require_dump

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.convert._rendered import CAMERAS, TICKS, WORKING_RANGE_M, ids_of, render_tiny, renderer_frames  # noqa: E402

pytestmark = pytest.mark.conformance
RATES = (60, 15)


@pytest.fixture(scope="module")
def loaded(tmp_path_factory, lerobot_python):
    folder = tmp_path_factory.mktemp("bake-maps-conformance")
    raw, rendered = render_tiny(folder)
    roots = {hz: bake([rendered], folder / f"baked{hz}", BakeConfig(control_space="joint_pos", control_freq=hz))
             for hz in RATES}
    dumps = probe_many(lerobot_python, [roots[hz] for hz in RATES], folder / "probe")
    truth = {e: renderer_frames(raw, rendered, e) for e in open_dataset(rendered).episode_indices}
    return {hz: (roots[hz], require_dump(d)) for hz, d in zip(RATES, dumps)}, truth


@pytest.mark.parametrize("hz", RATES)
def test_lerobot_reads_baked_depth_as_ours_and_the_renderers(loaded, hz):
    (root, dump), truth = loaded[0][hz], loaded[1]
    ds, stride = open_dataset(root), 60 // hz
    assert dump.meta["fps"] == hz and dump.meta["num_frames"] == ds.num_frames == 2 * TICKS // stride
    for c in CAMERAS:
        key = f"observation.images.{c}_depth"
        ours = np.concatenate([ds.read_video(e, key)[..., 0] for e in ds.episode_indices])
        theirs = dump.columns[key][..., 0] / 1000.0  # lerobot returns millimetres by default
        assert theirs.shape == ours.shape == (2 * TICKS // stride, 224, 224)
        np.testing.assert_allclose(theirs, ours, rtol=0, atol=0.5e-3 + 1e-6)
        rendered = np.concatenate([truth[e][f"{c}_depth"][::stride] for e in ds.episode_indices])
        near = rendered < WORKING_RANGE_M
        assert near.mean() > 0.5 and np.abs(theirs - rendered)[near].max() <= 1.5e-3, key


@pytest.mark.parametrize("hz", RATES)
def test_lerobot_reads_baked_segmentation_ids_exactly(loaded, hz):
    (root, dump), truth = loaded[0][hz], loaded[1]
    ds, stride = open_dataset(root), 60 // hz
    for c in CAMERAS:
        key = f"observation.images.{c}_segmentation"
        ours = np.concatenate([ds.read_video(e, key) for e in ds.episode_indices])
        np.testing.assert_array_equal(dump.columns[key], ours)  # the probe's uint8 view of lerobot's [0, 1] floats
        ids = np.concatenate([truth[e][f"{c}_ids"][::stride] for e in ds.episode_indices])
        np.testing.assert_array_equal(ids_of(dump.columns[key], 600), ids)
