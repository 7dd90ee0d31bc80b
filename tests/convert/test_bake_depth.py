"""Depth and segmentation maps through bake: carried at the native rate (packets copied) and
sub-sampled (re-encoded losslessly), decoded back to the renderer's metres and instance ids."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from demoforge.convert import BakeConfig, BakeError, bake
from demoforge.dataset import DatasetWriter, Feature, VideoSettings, check_dataset, open_dataset
from demoforge.dataset.decode import decode_at
from tests.convert._rendered import CAMERAS, TICKS, WORKING_RANGE_M, ids_of, render_tiny, renderer_frames

pytestmark = pytest.mark.slow
RATES = (60, 15)
DEPTH = [f"observation.images.{c}_depth" for c in CAMERAS]
SEG = [f"observation.images.{c}_segmentation" for c in CAMERAS]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("bake-depth")
    raw, rendered = render_tiny(folder)
    baked = {hz: bake([rendered], folder / f"baked{hz}", BakeConfig(control_space="joint_pos", control_freq=hz))
             for hz in RATES}
    truth = {e: renderer_frames(raw, rendered, e) for e in open_dataset(rendered).episode_indices}
    return {"raw": raw, "rendered": rendered, "baked": baked, "truth": truth, "folder": folder}


@pytest.mark.parametrize("hz", RATES)
def test_baked_depth_is_the_renderers_within_a_millimetre(tiny, hz):
    ds, stride = open_dataset(tiny["baked"][hz]), 60 // hz
    assert check_dataset(ds.root) == []
    checked = 0
    for e in ds.episode_indices:
        for c, key in zip(CAMERAS, DEPTH):
            truth = tiny["truth"][e][f"{c}_depth"][::stride]
            got = ds.read_video(e, key)[..., 0]
            assert got.shape == truth.shape == (TICKS // stride, 224, 224)
            near = truth < WORKING_RANGE_M
            assert near.mean() > 0.5, (key, near.mean())  # the table and the blocks, not only background
            assert np.abs(got - truth)[near].max() <= 1e-3, key
            checked += int(near.sum())
    assert checked > 100_000


@pytest.mark.parametrize("hz", RATES)
def test_baked_depth_codes_are_the_rendered_ones(tiny, hz):
    """Not one 12-bit code moves: copied at 60 Hz, re-encoded from codes (not metres) at 15 Hz."""
    src, ds, stride = open_dataset(tiny["rendered"]), open_dataset(tiny["baked"][hz]), 60 // hz
    for e in ds.episode_indices:
        for key in DEPTH:
            n = ds.episode(e)["length"]
            theirs = decode_at(src.video_path(e, key), src.episode(e)[f"videos/{key}/from_timestamp"]
                               + np.arange(TICKS)[::stride] / 60, raw=True)
            ours = decode_at(ds.video_path(e, key), ds.episode(e)[f"videos/{key}/from_timestamp"]
                             + np.arange(n) / hz, raw=True)
            np.testing.assert_array_equal(ours, theirs)
    info = ds.info.features[DEPTH[0]].info
    assert info["is_depth_map"] is True and info["depth_unit"] == "m" and info["video.fps"] == hz
    assert (info["video.depth_min"], info["video.depth_max"], info["video.pix_fmt"]) == (0.01, 10.0, "gray12le")


@pytest.mark.parametrize("hz", RATES)
def test_segmentation_ids_survive_bake_exactly(tiny, hz):
    ds, stride = open_dataset(tiny["baked"][hz]), 60 // hz
    for e in ds.episode_indices:
        for c, key in zip(CAMERAS, SEG):
            truth = tiny["truth"][e][f"{c}_ids"][::stride]
            ids = ids_of(ds.read_video(e, key), 600)
            np.testing.assert_array_equal(ids, truth)
            assert len(np.unique(truth)) >= 3, key  # several instances in view, not a blank image
    info = ds.info.features[SEG[0]].info
    assert info["is_segmentation_map"] is True and (info["video.codec"], info["video.pix_fmt"]) == ("hevc", "gbrp")


def test_native_rate_copies_and_sub_sampling_reencodes_losslessly(tiny):
    records = {hz: json.loads((tiny["baked"][hz] / "meta/bake.json").read_text()) for hz in RATES}
    for hz, how in ((60, "copied"), (15, "encoded losslessly")):
        for rec in records[hz]["sources"][0]["episodes"]:
            assert {rec["video"][k] for k in DEPTH + SEG} == {how}, rec["video"]
    notes = "\n".join(records[15]["notes"])
    for key in DEPTH + SEG:
        assert f"{key}: re-encoded losslessly (every value kept), since one frame in 4 is kept" in notes
    assert not any("_depth" in n or "_segmentation" in n for n in records[60]["notes"])


def test_lossless_bake_is_byte_identical(tiny, tmp_path):
    again = bake([tiny["rendered"]], tmp_path / "again", BakeConfig(control_space="joint_pos", control_freq=15))
    def videos(root: Path) -> dict[str, str]:
        return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(root.glob("videos/**/*.mp4"))}
    assert videos(again) == videos(tiny["baked"][15]) and len(videos(again)) == 6




def _source(root: Path, depth_info: dict, seg_info: dict | None = None, n: int = 8) -> Path:
    from demoforge.raw import schema
    from tests.convert._sources import JOINTS, N_ARM, N_STATE, law, raw_columns

    features = schema.raw_features(n_arm=N_ARM, n_command=N_ARM, n_state=N_STATE, atoms=["(on a b)"],
                                   joint_names=JOINTS)
    features["observation.images.cam_depth"] = Feature("video", (16, 16, 1), info=depth_info)
    features["observation.images.cam_segmentation"] = Feature("video", (16, 16, 3), info=seg_info)
    cols = raw_columns(n, cams=())
    cols["observation.images.cam_depth"] = np.full((n, 16, 16), 0.75, np.float32)
    cols["observation.images.cam_segmentation"] = np.zeros((n, 16, 16, 3), np.uint8)
    cols["observation.images.cam_segmentation"][:, 4:12, 4:12] = (255, 38, 38)
    with DatasetWriter.create(root, fps=60, features=features, robot_type="test_arm") as w:
        w.add_episode(cols, task="t", extra={"outcome": "success", "seed": 0})
        w.write_meta_file(schema.CONTROLLER_META, law().to_json())
    return root


def test_depth_maps_coded_differently_are_not_baked_together(tmp_path):
    a = _source(tmp_path / "a", {"is_depth_map": True})
    b = _source(tmp_path / "b", {"is_depth_map": True, "depth_max": 4.0})
    with pytest.raises(BakeError, match=r"b: depth map 'observation.images.cam_depth' is coded .*depth_max=4.0.*"
                                        r"their 12-bit codes mean different metres"):
        bake([a, b], tmp_path / "out", BakeConfig(control_space="joint_pos"))


def test_a_lossy_segmentation_source_is_carried_as_decoded_and_named(tmp_path):
    lossy = VideoSettings().info_block(fps=60, height=16, width=16)  # as renders before lossless maps wrote them
    src = _source(tmp_path / "src", {"is_depth_map": True}, seg_info=lossy)
    assert open_dataset(src).info.features["observation.images.cam_segmentation"].info["video.codec"] == "h264"
    out = bake([src], tmp_path / "out", BakeConfig(control_space="joint_pos", control_freq=30))
    notes = "\n".join(json.loads((out / "meta/bake.json").read_text())["notes"])
    assert "stored this segmentation map lossy (h264 crf 23, yuv420p, keyframe every 15 frames (0.25 s))" in notes
    assert "render the raw dataset again" in notes
    ds, before = open_dataset(out), open_dataset(src)
    np.testing.assert_array_equal(ds.read_video(0, "observation.images.cam_segmentation"),
                                  before.read_video(0, "observation.images.cam_segmentation")[::2])
    assert ds.info.features["observation.images.cam_segmentation"].info["video.pix_fmt"] == "gbrp"
