"""Depth and segmentation maps as lossless video: exact round trips, the same bytes every run,
and every frame reachable the way lerobot's pyav decoder reaches it (seek to the keyframe at or
before the time, decode forward)."""

from __future__ import annotations

import av
import numpy as np
import pytest

from demoforge.dataset import DatasetWriter, Feature, check_dataset, open_dataset

N, FPS = 24, 60  # frames, rate: keyframes at 0 and 15 (g = 15), so one lies inside the episode
DEPTH, SEG = "observation.images.cam_depth", "observation.images.cam_segmentation"
H, W = 72, 80  # over segmentation.X265_INTRA_ONLY_SIDE: the maps have P frames between their keyframes


def _write(root, seed: int = 0):
    rng = np.random.default_rng(seed)
    palette = rng.integers(0, 256, (30, 3), dtype=np.uint8)
    cols = {"observation.state": rng.normal(size=(N, 2)).astype(np.float32),
            # scenes that move a little from frame to frame (so x265 predicts them), with noise
            DEPTH: (1.0 + 0.01 * (np.arange(W)[None, None, :] + np.arange(N)[:, None, None])
                    + rng.uniform(0.0, 0.05, (N, H, W))).astype(np.float32),
            SEG: palette[(np.arange(W)[None, None, :] // 8 + np.arange(H)[None, :, None] // 12
                          + np.arange(N)[:, None, None] // 4 + (rng.random((N, H, W)) < 0.05)) % 30]}
    feats = {"observation.state": Feature("float32", (2,)),
             DEPTH: Feature("video", (H, W, 1), info={"is_depth_map": True}), SEG: Feature("video", (H, W, 3))}
    with DatasetWriter.create(root, fps=FPS, features=feats) as w:
        w.add_episode(cols, task="t")
    return cols


def test_segmentation_round_trips_exactly_and_is_marked(tmp_path):
    cols = _write(tmp_path / "ds")
    ds = open_dataset(tmp_path / "ds")
    assert check_dataset(ds.root) == []
    np.testing.assert_array_equal(ds.read_video(0, SEG), cols[SEG])
    info = ds.info.features[SEG].info
    assert (info["video.codec"], info["video.pix_fmt"], info["is_segmentation_map"]) == ("hevc", "gbrp", True)
    _write(tmp_path / "again")
    for key in (DEPTH, SEG):
        assert ds.video_path(0, key).read_bytes() == open_dataset(tmp_path / "again").video_path(0, key).read_bytes()


@pytest.mark.parametrize("key", [DEPTH, SEG])
def test_every_frame_is_reached_by_a_backward_seek(tmp_path, key):
    _write(tmp_path / "ds")
    path = open_dataset(tmp_path / "ds").video_path(0, key)
    with av.open(str(path)) as c:
        rate = c.streams.video[0].time_base * FPS
        packets = [(p.pts, p.dts, p.is_keyframe) for p in c.demux(video=0) if p.pts is not None]
    assert all(pts == dts for pts, dts, _ in packets)  # no reordered frames
    keys = [pts * rate for pts, _, key in packets if key]
    assert keys[0] == 0 and 1 < len(keys) < len(packets)  # a keyframe inside, predicted frames beside it
    for k in range(N):
        with av.open(str(path)) as c:  # lerobot 0.6.1's decode_video_frames_pyav, as it seeks
            stream = c.streams.video[0]
            c.seek(round(k / FPS / stream.time_base) - 1, backward=True, any_frame=False, stream=stream)
            first = next(f for f in c.decode(stream) if f.pts is not None)
            assert float(first.pts * stream.time_base) <= k / FPS + 1e-4, (key, k)
