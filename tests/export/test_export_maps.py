"""Depth and segmentation maps in the exports: depth is refused by both trainers (their loaders
decode every video as 8-bit RGB), segmentation is carried exactly but fed to no model slot."""

from __future__ import annotations

import json

import numpy as np
import pytest

from demoforge.convert import BakeConfig, BakeError, bake
from demoforge.dataset.decode import decode_at
from demoforge.dataset.reader import open_dataset
from demoforge.export import EXPORT_PATH, ExportConfig, ExportError, export
from tests.convert._rendered import render_tiny

pytestmark = pytest.mark.slow
SEG_CAMS = ("front", "wrist", "front_segmentation", "wrist_segmentation")


@pytest.fixture(scope="module")
def baked(tmp_path_factory):
    folder = tmp_path_factory.mktemp("export-maps")
    _, rendered = render_tiny(folder)
    return {"folder": folder, "rendered": rendered,
            "all": bake([rendered], folder / "all", BakeConfig(convention="joint_pos", control_freq=30)),
            "seg": bake([rendered], folder / "seg", BakeConfig(convention="joint_pos", control_freq=30,
                                                                 cams=SEG_CAMS))}


@pytest.mark.parametrize("trainer, why", [("openpi", "openpi's pinned lerobot"),
                                          ("gr00t", "GR00T N1.6's LeRobot loader")])
def test_depth_maps_are_refused_with_the_reason_and_the_fix(baked, trainer, why, tmp_path):
    with pytest.raises(ExportError) as err:
        export(baked["all"], tmp_path / trainer, ExportConfig(trainer=trainer, action_horizon=2))
    message = str(err.value)
    assert "meta/info.json: depth maps ['observation.images.front_depth', 'observation.images.wrist_depth'] " \
           f"cannot be exported for {trainer}: {why}" in message
    assert "8-bit RGB" in message and f"--cams {','.join(SEG_CAMS)}" in message
    assert not (tmp_path / trainer).exists()


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


def test_bake_refuses_depth_in_the_v21_layout(baked, tmp_path):
    with pytest.raises(BakeError, match=r"--lerobot-format v2.1: depth maps \['observation.images.front_depth', "
                                        r"'observation.images.wrist_depth'\] cannot be written as v2.1.*"
                                        r"--cams front,wrist,front_segmentation,wrist_segmentation"):
        bake([baked["rendered"]], tmp_path / "v21", BakeConfig(convention="joint_pos", lerobot_format="v2.1"))


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
