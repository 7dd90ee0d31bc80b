"""The re-encode path of a bake: decoding ahead on a thread, and the exact pixel counts of
the kept frames (taken from swscale's planar RGB, which must equal the rgb24 decoders see)."""

import threading

import av
import numpy as np
import pyarrow.parquet as pq
import pytest

from demoforge.convert import BakeConfig, bake
from demoforge.convert.frames import _ahead, _PixelCounter
from demoforge.dataset import open_dataset
from demoforge.dataset.keys import HISTOGRAM_PREFIX
from demoforge.dataset.stats import pixel_histogram
from tests.convert._sources import CAMS, write_raw


def _yuv_frames(n, h, w, seed=0):
    rng = np.random.default_rng(seed)
    frames = []
    for _ in range(n):
        frame = av.VideoFrame(w, h, "yuv420p")
        for plane in frame.planes:  # every byte, padding included: any Y, U, V combination
            np.frombuffer(plane, np.uint8)[:] = rng.integers(0, 256, plane.buffer_size, dtype=np.uint8)
        frames.append(frame)
    return frames


@pytest.mark.parametrize("h, w", [(32, 48), (66, 90)], ids=["aligned", "padded-rows"])
def test_pixel_counter_counts_the_rgb24_pixels(h, w):
    frames = _yuv_frames(9, h, w)  # two full batches of four and one of one
    counter = _PixelCounter(h, w)
    for frame in frames:
        counter.add(frame)
    want = sum(pixel_histogram(f.to_ndarray(format="rgb24")[None]) for f in frames)
    assert np.array_equal(counter.result(), want)


def test_a_bake_counts_the_kept_source_frames(tmp_path):
    raw = write_raw(tmp_path / "raw", lengths=(12,))
    out = bake([raw], tmp_path / "out", BakeConfig(control_space="joint_vel", control_freq=15))
    row = pq.read_table(out / "meta/episodes/chunk-000/file-000.parquet").to_pylist()[0]
    src = open_dataset(raw)
    for key in CAMS:
        kept = src.read_video(0, key)[[0, 4, 8]]
        assert np.array_equal(np.asarray(row[HISTOGRAM_PREFIX + key]), pixel_histogram(kept))


def test_ahead_yields_in_order_then_raises_the_producers_error():
    def items():
        yield from range(5)
        raise KeyError("decoder broke")

    got = []
    with pytest.raises(KeyError, match="decoder broke"):
        for item in _ahead(items(), depth=2):
            got.append(item)
    assert got == [0, 1, 2, 3, 4]


def test_closing_ahead_early_stops_and_closes_the_producer():
    closed, produced = threading.Event(), []

    def items():
        try:
            for k in range(10_000):
                produced.append(k)
                yield k
        finally:
            closed.set()

    stream = _ahead(items(), depth=3)
    assert [next(stream) for _ in range(2)] == [0, 1]
    stream.close()  # what an encoder error in the consumer does
    assert closed.is_set() and len(produced) <= 2 + 3 + 1  # bounded read-ahead, then stopped
