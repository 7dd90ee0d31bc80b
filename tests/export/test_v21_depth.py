"""Depth maps in the v2.1 layout the exports (and `bake --lerobot-format v2.1`) write: codes packed
into lossless RGB (rgb12), exact, described in the feature's info block, deterministic."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from demoforge.convert.v21 import write_v21
from demoforge.dataset import check_dataset, open_dataset
from demoforge.dataset.decode import decode_at
from demoforge.dataset.depth import DepthCoding, pack_rgb12, unpack_rgb12, unpack_rgb12_codes
from demoforge.dataset.stats import histogram_stats, pixel_histogram
from tests.dataset.test_depth import write

KEY = "observation.images.depth"


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_v21_depth_is_packed_losslessly_with_how_to_unpack(tmp_path):
    src = write(tmp_path / "v3")
    out = write_v21(src, tmp_path / "v21")
    assert check_dataset(out) == []
    info = json.loads((out / "meta/info.json").read_text())
    ft = info["features"][KEY]
    assert ft["shape"] == [24, 32, 3]
    block = ft["info"]
    assert (block["video.codec"], block["video.pix_fmt"], block["is_depth_map"]) == ("hevc", "gbrp", False)
    assert (block["depth_packing"], block["depth_min"], block["depth_max"], block["shift"], block["use_log"]) == \
        ("rgb12", 0.01, 10.0, 3.5, True)
    coding = DepthCoding.from_info(block)
    ds = open_dataset(src)
    packed = []
    for e in ds.episode_indices:
        n = ds.episode(e)["length"]
        codes = decode_at(ds.video_path(e, KEY), ds.episode(e)[f"videos/{KEY}/from_timestamp"] + np.arange(n) / 30,
                          raw=True)
        rgb = decode_at(out / info["video_path"].format(episode_chunk=0, video_key=KEY, episode_index=e),
                        np.arange(n) / 30)
        np.testing.assert_array_equal(rgb, pack_rgb12(codes))
        np.testing.assert_array_equal(unpack_rgb12_codes(rgb), codes)
        np.testing.assert_array_equal(unpack_rgb12(rgb, coding), ds.read_video(e, KEY)[..., 0])
        packed.append(rgb)
    # statistics of the pixels the v2.1 readers see, as lerobot <= 0.3 wants them for an image: (3, 1, 1)
    stats = json.loads((out / "meta/stats.json").read_text())[KEY]
    want = histogram_stats(pixel_histogram(np.concatenate(packed)), sum(len(p) for p in packed))
    assert stats == want and np.asarray(stats["mean"]).shape == (3, 1, 1)
    first = json.loads((out / "meta/episodes_stats.jsonl").read_text().splitlines()[0])["stats"][KEY]
    assert first["max"] == histogram_stats(pixel_histogram(packed[0]), len(packed[0]))["max"]


def test_v21_depth_is_byte_identical_when_written_again(tmp_path):
    src = write(tmp_path / "v3")
    assert _digest(write_v21(src, tmp_path / "a")) == _digest(write_v21(src, tmp_path / "b"))


def test_bake_refuses_packed_depth_instead_of_re_encoding_it_as_a_camera(tmp_path):
    """A packed v2.1 dataset read back (`bake EXPORT`) would carry its depth as an RGB camera and
    re-encode it lossily, losing the codes: bake refuses, naming the key and the fix."""
    import pytest

    from demoforge.convert import BakeConfig, BakeError, bake

    out = write_v21(write(tmp_path / "v3"), tmp_path / "v21")
    with pytest.raises(BakeError, match=r"depth codes packed into RGB \(rgb12.*bake the LeRobot v3.0 dataset") as err:
        bake([out], tmp_path / "b", BakeConfig(control_space="joint_pos"))
    assert KEY in str(err.value) and not (tmp_path / "b").exists()
