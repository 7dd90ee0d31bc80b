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
