import json

import numpy as np
import pytest

from demoforge.dataset import DatasetWriter, Feature, check_dataset, merge_datasets, open_dataset
from demoforge.dataset.depth import (
    QMAX, DepthCoding, code_histogram, pack_rgb12, packed_histogram, unpack_rgb12, unpack_rgb12_codes,
)
from demoforge.dataset.stats import pixel_histogram
from demoforge.errors import DatasetError

FEATURES = {"s": Feature("float32", (2,)),
            "observation.images.depth": Feature("video", (24, 32, 1), info={"is_depth_map": True})}


def depth_episode(seed, length=10):
    rng = np.random.default_rng(seed)
    return {"s": rng.normal(size=(length, 2)), "observation.images.depth": rng.uniform(0.2, 3.0, (length, 24, 32))}


def write(root, n=2):
    with DatasetWriter.create(root, fps=30, features=FEATURES) as w:
        for e in range(n):
            w.add_episode(depth_episode(e), task="t")
    return root


def test_coding_round_trip_and_lerobot_defaults():
    coding = DepthCoding()
    d = np.linspace(0.01, 10.0, 1000, dtype=np.float32)
    codes = coding.quantize(d)
    assert codes.min() == 0 and codes.max() == QMAX
    back = coding.dequantize(codes)
    # log coding: a code step is ~0.04% of (depth + shift)
    assert np.all(np.abs(back - d) <= 0.0005 * (d + 3.5))
    np.testing.assert_array_equal(coding.quantize(back), codes)


def test_depth_round_trip_is_lossless_in_codes(tmp_path):
    root = write(tmp_path / "ds")
    assert check_dataset(root) == []
    ds = open_dataset(root)
    got = ds.read_video(1, "observation.images.depth")
    want = depth_episode(1)["observation.images.depth"]
    assert got.shape == (10, 24, 32, 1) and got.dtype == np.float32
    coding = DepthCoding()
    np.testing.assert_array_equal(got[..., 0], coding.dequantize(coding.quantize(want)))
    info = json.loads((root / "meta/info.json").read_text())["features"]["observation.images.depth"]["info"]
    assert (info["video.codec"], info["video.pix_fmt"], info["is_depth_map"]) == ("hevc", "gray12le", True)


def test_depth_stats_exact_over_stored_values(tmp_path):
    root = write(tmp_path / "ds")
    coding = DepthCoding()
    stored = np.concatenate([coding.dequantize(coding.quantize(depth_episode(e)["observation.images.depth"]))
                             for e in range(2)]).astype(np.float64).ravel()
    stats = json.loads((root / "meta/stats.json").read_text())["observation.images.depth"]
    assert np.shape(stats["mean"]) == (1, 1, 1)
    np.testing.assert_allclose(np.ravel(stats["q90"]), np.quantile(stored, 0.9), rtol=1e-6)
    np.testing.assert_allclose(np.ravel(stats["mean"]), stored.mean(), rtol=1e-6)


def test_bad_depth_rejected(tmp_path):
    with DatasetWriter.create(tmp_path / "ds", fps=30, features=FEATURES) as w:
        bad = depth_episode(0)
        bad["observation.images.depth"][3, 0, 0] = np.nan
        with pytest.raises(DatasetError, match="depth value nan at frame 3"):
            w.add_episode(bad, task="t")
        bad["observation.images.depth"] = np.zeros((10, 24, 32), np.uint16)
        with pytest.raises(DatasetError, match="expected float metres"):
            w.add_episode(bad, task="t")
        w.add_episode(depth_episode(0), task="t")


def test_depth_merges_without_reencoding(tmp_path):
    merge_datasets([write(tmp_path / "a"), write(tmp_path / "b", n=1)], tmp_path / "m")
    m = open_dataset(tmp_path / "m")
    coding = DepthCoding()
    np.testing.assert_array_equal(m.read_video(2, "observation.images.depth")[..., 0],
                                  coding.dequantize(coding.quantize(depth_episode(0)["observation.images.depth"])))


def test_rgb12_packing_round_trips_every_code_exactly():
    codes = np.arange(QMAX + 1, dtype=np.uint16).reshape(64, 64)
    rgb = pack_rgb12(codes)
    assert rgb.dtype == np.uint8 and rgb.shape == (64, 64, 3)
    assert rgb[..., 0].max() == 255 and rgb[..., 1].max() == 15 and not rgb[..., 2].any()
    np.testing.assert_array_equal(unpack_rgb12_codes(rgb), codes)
    assert len({tuple(p) for p in rgb.reshape(-1, 3)}) == QMAX + 1  # 4096 distinct colours
    # R alone is the code's top byte: an 8-bit depth image, monotonic in the code
    np.testing.assert_array_equal(rgb[..., 0].reshape(-1), np.arange(QMAX + 1) // 16)
    coding = DepthCoding(depth_min=0.05, depth_max=4.0, use_log=False)
    np.testing.assert_array_equal(unpack_rgb12(rgb, coding), coding.dequantize(codes))


def test_rgb12_unpacking_refuses_pixels_no_code_packs_to():
    rgb = pack_rgb12(np.full((2, 4, 4), 1000, np.uint16))
    rgb[1, 2, 3, 1] = 16  # what a lossy codec does to the low bits
    with pytest.raises(DatasetError, match=r"front_depth: pixel \[1, 2, 3\] is RGB \[62, 16, 0\].*lossily"):
        unpack_rgb12_codes(rgb, where="front_depth")
    with pytest.raises(DatasetError, match="must be uint8"):
        unpack_rgb12_codes(rgb.astype(np.float32) / 255)
    with pytest.raises(DatasetError, match=r"must lie in \[0, 4095\], got \[0, 4096\]"):
        pack_rgb12(np.array([0, 4096]))


def test_packed_histogram_counts_the_packed_pixels():
    codes = np.random.default_rng(3).integers(0, QMAX + 1, (5, 24, 32)).astype(np.uint16)
    np.testing.assert_array_equal(packed_histogram(code_histogram(codes)), pixel_histogram(pack_rgb12(codes)))
