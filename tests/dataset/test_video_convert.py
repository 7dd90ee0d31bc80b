"""The writer's own RGB -> YUV 4:2:0 conversion and the exact pixel histograms."""

import numpy as np
import pytest

from demoforge.dataset.stats import pixel_histogram
from demoforge.dataset.video import rgb_to_yuv420p


def _reference_yuv420p(rgb: np.ndarray):
    """Per-pixel BT.601 limited range in Python-sized integers, chroma of each 2x2 block's sum."""
    x = rgb.astype(np.int64)
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    y = ((66 * r + 129 * g + 25 * b + 128) >> 8) + 16
    h, w = r.shape[-2:]
    s = x.reshape(*x.shape[:-3], h // 2, 2, w // 2, 2, 3).sum(axis=(-4, -2))
    sr, sg, sb = s[..., 0], s[..., 1], s[..., 2]
    u = ((-38 * sr - 74 * sg + 112 * sb + 512) >> 10) + 128
    v = ((112 * sr - 94 * sg - 18 * sb + 512) >> 10) + 128
    return [np.clip(p, 0, 255).astype(np.uint8) for p in (y, u, v)]


def _frames(shape, seed=0):
    rng = np.random.default_rng(seed)
    frames = rng.integers(0, 256, size=shape, dtype=np.uint8)
    frames[0, :2, :2] = 255  # the extremes of every plane: white, black, pure red and blue
    frames[0, 2:4, :2] = 0
    frames[0, :2, 2:4] = (255, 0, 0)
    frames[0, 2:4, 2:4] = (0, 0, 255)
    return frames


@pytest.mark.parametrize("shape", [(3, 4, 6, 3), (5, 32, 48, 3), (2, 66, 90, 3)])
def test_rgb_to_yuv420p_matches_the_integer_formula(shape):
    frames = _frames(shape)
    batch = rgb_to_yuv420p(frames)
    for got, want in zip(batch, _reference_yuv420p(frames)):
        assert got.dtype == np.uint8 and np.array_equal(got, want)
    for t in range(shape[0]):  # one frame at a time gives the same planes
        for got, whole in zip(rgb_to_yuv420p(frames[t]), batch):
            assert np.array_equal(got, whole[t])


def test_rgb_to_yuv420p_of_a_strided_view():
    frames = _frames((2, 32, 48, 3))
    view = frames[:, ::-1, :, ::-1]  # flipped rows, BGR order: not contiguous
    for got, want in zip(rgb_to_yuv420p(view), _reference_yuv420p(np.ascontiguousarray(view))):
        assert np.array_equal(got, want)


@pytest.mark.parametrize("shape", [(1, 1, 1, 3), (1, 96, 96, 3), (16, 96, 96, 3), (1, 1001, 393, 3)],
                         ids=["one-pixel", "small", "pairs", "pairs-odd-pixel-count"])
def test_pixel_histogram_counts_every_channel_exactly(shape):
    frames = _frames(shape, seed=1) if shape[1] >= 4 else np.full(shape, 7, np.uint8)
    pixels = frames.reshape(-1, 3)
    want = np.stack([np.bincount(pixels[:, c], minlength=256) for c in range(3)])
    got = pixel_histogram(frames)
    assert got.dtype == np.int64 and got.shape == (3, 256) and np.array_equal(got, want)
    assert np.array_equal(pixel_histogram(frames[..., ::-1]), want[::-1])  # strided input


def test_a_converter_reused_across_batches_gives_the_one_shot_planes_and_counts():
    """The writer keeps one converter per camera: its buffers must not carry anything over."""
    from demoforge.dataset.video import Yuv420Converter

    frames = _frames((11, 32, 48, 3), seed=2)
    conv = Yuv420Converter(32, 48, capacity=4)
    want = _reference_yuv420p(frames)
    for start in (0, 4, 8):  # the last batch is short: 3 of 4 slots
        batch = frames[start:start + 4]
        for got, whole in zip(conv.convert(batch), want):
            assert np.array_equal(got, whole[start:start + 4])
        assert np.array_equal(conv.histogram(), pixel_histogram(batch))
    with pytest.raises(ValueError, match="do not fit"):
        conv.convert(frames[:5])


@pytest.mark.parametrize("pixels", [0, 1, 2**17 - 1, 2**17 + 1, 5 * 2**20 + 3], ids=["none", "one", "odd", "more", "large"])
def test_planar_histogram_counts_every_channel_exactly(pixels):
    from demoforge.dataset.stats import pixel_histogram
    from demoforge.dataset.video import planar_histogram

    planes = np.random.default_rng(3).integers(0, 256, size=(3, pixels), dtype=np.uint8)
    if pixels:
        planes[:, -1] = (0, 255, 7)  # the last, odd pixel is counted too
    want = np.stack([np.bincount(planes[c], minlength=256) for c in range(3)])
    for got in (planar_histogram(planes), planar_histogram(planes[:, ::-1]),  # a strided view: the same counts
                pixel_histogram(np.ascontiguousarray(planes.T)), pixel_histogram(planes.T)):
        assert got.dtype == np.int64 and got.shape == (3, 256) and np.array_equal(got, want)


def test_pixel_histogram_refuses_what_is_not_uint8_rgb():
    from demoforge.dataset.stats import pixel_histogram

    for bad in (np.zeros((2, 2, 3), np.float32), np.zeros((2, 2, 3), np.int64), np.zeros((2, 2, 4), np.uint8)):
        with pytest.raises(ValueError, match="uint8 pixels"):
            pixel_histogram(bad)


def test_segment_encoder_counts_what_it_encodes(tmp_path):
    """add_frames larger than the converter's batch, and a single frame: the counts of all of them."""
    from demoforge.dataset.video import SegmentEncoder, VideoSettings

    frames = _frames((37, 32, 48, 3), seed=4)
    enc = SegmentEncoder(tmp_path / "s.mp4", settings=VideoSettings(), fps=30, height=32, width=48)
    enc.add_frames(frames[:36])  # more than one conversion batch (16 frames at this size)
    enc.add(frames[36])
    enc.close()
    assert np.array_equal(enc.histogram, pixel_histogram(frames))
    assert enc.count == 37


def test_remux_rounds_timestamps_like_fractions():
    """concat_segments rescales packet times with integers; halves go to even as round(Fraction) does."""
    from fractions import Fraction

    from demoforge.dataset.remux import _round_ratio

    rng = np.random.default_rng(5)
    cases = [(1, 2), (3, 2), (5, 2), (-1, 2), (-3, 2), (0, 7), (15360, 512), (7, 3)]
    cases += [(int(a), int(b)) for a, b in zip(rng.integers(-10**9, 10**9, 2000), rng.integers(1, 90000, 2000))]
    for a, b in cases:
        assert _round_ratio(a, b) == round(Fraction(a, b)), (a, b)


def test_joined_video_is_on_disk_before_it_takes_its_name(tmp_path, monkeypatch):
    """concat_segments writes OUT.tmp, fsyncs it, then renames it: a crash leaves the old file or
    the whole new one, never a renamed file whose bytes were still in the page cache."""
    import os

    from demoforge.dataset import video
    from demoforge.dataset.video import SegmentEncoder, VideoSettings, concat_segments

    segments = []
    for k in range(2):
        enc = SegmentEncoder(tmp_path / f"s{k}.mp4", settings=VideoSettings(), fps=30, height=32, width=48)
        enc.add_frames(_frames((5, 32, 48, 3), seed=k))
        enc.close()
        segments.append(enc.path)
    events = []
    synced = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"))),
                                                 synced(fd))[1])
    replace = video.Path.replace
    monkeypatch.setattr(video.Path, "replace", lambda self, target: (events.append(("rename", str(self))),
                                                                     replace(self, target))[1])
    out = tmp_path / "joined.mp4"
    assert concat_segments(segments, out, fps=30) == [(0.0, 5 / 30), (5 / 30, 10 / 30)]
    tmp = str(out) + ".tmp"
    assert events.index(("fsync", tmp)) < events.index(("rename", tmp))
