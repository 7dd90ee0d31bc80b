"""Depth and segmentation maps in the exports: both are carried exactly and fed to no model slot;
depth with its 12-bit codes packed into RGB (both loaders decode every video as 8-bit RGB), which
unpack to the baked codes and to the renderer's metres within a millimetre."""

from __future__ import annotations

import json
from pathlib import Path

import av
import numpy as np
import pytest

from demoforge.convert import BakeConfig, bake
from demoforge.dataset.decode import decode_at
from demoforge.dataset.depth import DepthCoding, unpack_rgb12, unpack_rgb12_codes
from demoforge.dataset.reader import open_dataset
from demoforge.export import EXPORT_PATH, ExportConfig, export
from tests.export import gr00t_reading
from tests.convert._rendered import CAMERAS, WORKING_RANGE_M, render_tiny, renderer_frames

pytestmark = pytest.mark.slow
SEG_CAMS = ("front", "wrist", "front_segmentation", "wrist_segmentation")
DEPTH = tuple(f"observation.images.{c}_depth" for c in CAMERAS)
STRIDE = 2  # 60 Hz rendered, 30 Hz baked


@pytest.fixture(scope="module")
def baked(tmp_path_factory):
    folder = tmp_path_factory.mktemp("export-maps")
    raw, rendered = render_tiny(folder)
    truth = {e: renderer_frames(raw, rendered, e) for e in open_dataset(rendered).episode_indices}
    return {"folder": folder, "rendered": rendered, "truth": truth,
            "all": bake([rendered], folder / "all", BakeConfig(control_space="joint_pos", control_freq=30)),
            "seg": bake([rendered], folder / "seg", BakeConfig(control_space="joint_pos", control_freq=30,
                                                                 cams=SEG_CAMS))}


@pytest.mark.parametrize("trainer", ["openpi", "gr00t"])
def test_depth_is_exported_packed_and_unpacks_to_the_baked_codes_and_renderers_metres(baked, trainer, tmp_path):
    root = export(baked["all"], tmp_path / trainer, ExportConfig(trainer=trainer, action_horizon=2))
    stamp = json.loads((root / EXPORT_PATH).read_text())
    assert list(stamp["depth_maps"]) == list(DEPTH)
    record = stamp["depth_maps"][DEPTH[0]]
    assert record["packing"] == "rgb12" and record["codes"].startswith("code = 16 * R + G")
    assert record["metres"].startswith("metres = exp(code / 4095 * (log(depth_max + shift)")
    _same_depth(baked["all"], root, baked["truth"])


def test_openpi_feeds_depth_to_no_image_slot(baked, tmp_path):
    root = export(baked["all"], tmp_path / "openpi", ExportConfig(trainer="openpi", action_horizon=2))
    stamp = json.loads((root / EXPORT_PATH).read_text())
    assert stamp["images"] == {"base_0_rgb": "observation.images.front", "left_wrist_0_rgb": "observation.images.wrist"}
    assert "_depth" not in (root / "meta/openpi/demoforge_config.py").read_text().split("IMAGES = {")[1].split("}")[0]


def test_gr00t_lists_depth_in_modality_json_and_trains_on_rgb(baked, tmp_path):
    root = export(baked["all"], tmp_path / "gr00t", ExportConfig(trainer="gr00t", action_horizon=2))
    modality = json.loads((root / "meta/modality.json").read_text())
    assert {"front_depth", "wrist_depth"} <= set(modality["video"])
    assert modality["video"]["front_depth"] == {"original_key": DEPTH[0]}
    config = gr00t_reading.load_modality_config(root / "meta/demoforge_modality_config.py")
    assert config["video"].modality_keys == ["front", "wrist"]


def test_openpi_carries_segmentation_exactly_in_no_image_slot(baked, tmp_path):
    root = export(baked["seg"], tmp_path / "openpi", ExportConfig(trainer="openpi", action_horizon=2))
    stamp = json.loads((root / EXPORT_PATH).read_text())
    assert stamp["images"] == {"base_0_rgb": "observation.images.front", "left_wrist_0_rgb": "observation.images.wrist"}
    assert stamp["segmentation_maps"] == ["observation.images.front_segmentation",
                                          "observation.images.wrist_segmentation"]
    _same_segmentation(baked["seg"], root)


def test_gr00t_lists_segmentation_in_modality_json_and_trains_on_rgb(baked, tmp_path):
    root = export(baked["seg"], tmp_path / "gr00t", ExportConfig(trainer="gr00t", action_horizon=2))
    modality = json.loads((root / "meta/modality.json").read_text())
    assert list(modality["video"]) == list(SEG_CAMS)
    assert 'modality_keys=["front", "wrist"]' in (root / "meta/demoforge_modality_config.py").read_text()
    _same_segmentation(baked["seg"], root)


def test_bake_v21_carries_depth_packed_as_the_exports_do(baked, tmp_path):
    v21 = bake([baked["rendered"]], tmp_path / "v21", BakeConfig(control_space="joint_pos", control_freq=30,
                                                                 lerobot_format="v2.1"))
    _same_depth(baked["all"], v21, baked["truth"])


def _same_depth(baked_root, v21_root, truth) -> None:
    """Every depth frame of the v2.1 root, decoded with PyAV and unpacked, holds the baked codes
    exactly and the renderer's metres within 1 mm over the working range."""
    ds = open_dataset(baked_root)
    info = json.loads((v21_root / "meta/info.json").read_text())
    for key, camera in zip(DEPTH, CAMERAS):
        block = info["features"][key]["info"]
        assert info["features"][key]["shape"] == [224, 224, 3]
        assert (block["video.pix_fmt"], block["depth_packing"], block["is_depth_map"]) == ("gbrp", "rgb12", False)
        coding = DepthCoding.from_info(block)
        assert coding == DepthCoding.from_info(ds.info.features[key].info)
        for e in ds.episode_indices:
            n = ds.episode(e)["length"]
            rgb = _pyav_rgb(v21_root / info["video_path"].format(episode_chunk=0, video_key=key, episode_index=e))
            assert len(rgb) == n
            np.testing.assert_array_equal(unpack_rgb12_codes(rgb, where=key), _baked_codes(ds, e, key))
            metres, want = unpack_rgb12(rgb, coding), truth[e][f"{camera}_depth"][::STRIDE]
            near = want < WORKING_RANGE_M
            assert metres.shape == want.shape and near.mean() > 0.5
            assert np.abs(metres - want)[near].max() <= 1e-3, key


def _baked_codes(ds, e: int, key: str) -> np.ndarray:
    """The 12-bit codes of episode `e` of depth map `key` in the baked (v3.0) dataset `ds`."""
    n = ds.episode(e)["length"]
    return decode_at(ds.video_path(e, key), ds.episode(e)[f"videos/{key}/from_timestamp"] + np.arange(n) / 30, raw=True)


def _pyav_rgb(path: Path) -> np.ndarray:
    with av.open(str(path)) as container:
        return np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])


def _same_segmentation(baked_root, v21_root) -> None:
    """Every segmentation frame of the v2.1 export is the baked one, byte for byte."""
    ds = open_dataset(baked_root)
    info = json.loads((v21_root / "meta/info.json").read_text())
    assert info["features"]["observation.images.front_segmentation"]["info"]["video.pix_fmt"] == "gbrp"
    for e in ds.episode_indices:
        n = ds.episode(e)["length"]
        for key in ("observation.images.front_segmentation", "observation.images.wrist_segmentation"):
            path = v21_root / info["video_path"].format(episode_chunk=0, video_key=key, episode_index=e)
            np.testing.assert_array_equal(decode_at(path, np.arange(n) / 30), ds.read_video(e, key))
