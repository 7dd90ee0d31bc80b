"""CameraEncoding: how a DatasetWriter's cameras become staged mp4 segments.

A whole episode's camera is encoded in one call (`encode_episode`); an episode recorded frame
by frame hands its frames over in batches to one encoder lane (a thread) per camera, so the
frames of a camera stay in order while the cameras and the data rows proceed side by side.
The writer owns the tabular part, placement and durability; this owns the encoders.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path

import numpy as np

from demoforge.dataset import segmentation
from demoforge.dataset.depth import DepthCoding, is_depth
from demoforge.dataset.layout import Feature
from demoforge.dataset.tables import fsync_file
from demoforge.dataset.video import SegmentEncoder, VideoSettings

BATCH = 16  # camera frames per encoder call (and per add_frame hand-off to an encoder lane)


class CameraEncoding:
    """The video features of one writer: their codings, and the encoders of the episode in progress."""

    def __init__(self, videos_dir: Path, user: Mapping[str, Feature], features: Mapping[str, Feature], *,
                 video: VideoSettings, fps: int):
        self._dir = videos_dir  # staging/videos: one folder per camera, one segment per episode
        self._user = user
        self._video = video
        self._fps = fps
        self.keys = [k for k, f in user.items() if f.dtype == "video"]
        self.depth = {k: DepthCoding.from_info(features[k].info) for k in self.keys if is_depth(features[k].info)}
        self.segmentation = {k for k in self.keys if segmentation.is_segmentation(k, features[k].info)}
        self._encoders: dict[str, SegmentEncoder] = {}
        self._batches: dict[str, np.ndarray] = {}  # camera frames not yet handed to a lane
        self._jobs: dict[str, list[Future]] = {}  # per camera: encoded batches -> histograms
        self._lanes: dict[str, ThreadPoolExecutor] = {}  # one thread per camera: frames stay in order

    def segment_path(self, episode: int, key: str) -> Path:
        return self._dir / key / f"{episode:06d}.mp4"

    def threaded(self, key: str) -> bool:
        """Whether a camera is encoded and counted on helper threads.

        SVT-AV1, and libx264 with cpu-independent=1 (VideoSettings.codec_options), give the
        same bytes whatever the scheduling (tests/dataset/test_video_determinism.py). Without
        that flag libx264 gave a few distinct outputs per 100 identical runs, many more while
        helper threads worked. Depth and segmentation (x265, lossless) are encoded here."""
        return (key not in self.depth and key not in self.segmentation
                and self._video.codec in ("av1", "h264"))

    def empty_hist(self, key: str) -> np.ndarray:
        return np.zeros((1, 4096) if key in self.depth else (3, 256), np.int64)

    # -- a whole episode -----------------------------------------------------------------
    def encode_episode(self, episode: int, key: str, frames: np.ndarray) -> np.ndarray:
        """Encode one camera's episode into its staged segment, synced; returns its histogram."""
        enc = self._open_segment(episode, key)
        try:
            for start in range(0, len(frames), BATCH):
                enc.add_frames(frames[start:start + BATCH])
            return self._finish_segment(enc)
        except BaseException:
            enc.abort()
            raise

    # -- frame by frame ------------------------------------------------------------------
    def add_frame(self, episode: int, frame_n: int, cols: Mapping[str, np.ndarray]) -> None:
        """Take frame `frame_n` of every camera; a full batch goes to the camera's lane."""
        slot = frame_n % BATCH
        for key in self.keys:
            if key not in self._encoders:
                self._encoders[key] = self._open_segment(episode, key)
                self._jobs[key] = []
            if slot == 0:  # a fresh batch: the lane may still be reading the previous one
                self._batches[key] = np.empty((BATCH, *cols[key].shape[1:]), cols[key].dtype)
            self._batches[key][slot] = cols[key][0]  # copied: callers may reuse their buffers
            if slot == BATCH - 1:
                self._submit_batch(key, BATCH)

    def flush(self, length: int) -> None:
        """Hand the last, partial batch of an episode of `length` frames to the lanes."""
        if length % BATCH:
            for key in self.keys:
                self._submit_batch(key, length % BATCH)

    def finish(self) -> None:
        """Have each lane flush and sync its camera's segment (the caller writes the data rows meanwhile)."""
        for key in self.keys:
            self._submit(key, self._finish_segment, self._encoders[key])

    def histograms(self) -> dict[str, np.ndarray]:
        """Wait for the lanes; a failed batch fails the episode. The last job is the segment's."""
        hists = {}
        for key in self.keys:
            for job in self._jobs[key]:
                hists[key] = job.result()
        return hists

    def abort(self) -> None:
        """Drop the episode in progress: its encoders are aborted once no lane uses them."""
        jobs = [job for key_jobs in self._jobs.values() for job in key_jobs]
        for job in jobs:
            job.cancel()
        wait(jobs)  # an encoder must not be closed while a lane still uses it
        for enc in self._encoders.values():
            enc.abort()

    def end(self) -> None:
        """Release the lanes and forget the episode in progress."""
        for lane in self._lanes.values():
            lane.shutdown()
        self._encoders, self._batches, self._jobs, self._lanes = {}, {}, {}, {}

    # -- internals -----------------------------------------------------------------------
    def _open_segment(self, episode: int, key: str) -> SegmentEncoder:
        h, w, _ = self._user[key].shape
        return SegmentEncoder(self.segment_path(episode, key), settings=self._video, fps=self._fps, height=h,
                              width=w, depth=key in self.depth, segmentation=key in self.segmentation)

    @staticmethod
    def _finish_segment(enc: SegmentEncoder) -> np.ndarray:
        enc.close()
        fsync_file(enc.path)
        return enc.histogram

    def _encode_batch(self, key: str, enc: SegmentEncoder, frames: np.ndarray) -> None:
        """Encode a few frames of one camera (depth in metres)."""
        if key in self.depth:
            frames = self.depth[key].quantize(frames)
        enc.add_frames(frames)

    def _submit_batch(self, key: str, n: int) -> None:
        """Hand the camera's first n buffered frames to its encoder lane."""
        jobs = self._jobs[key]
        if len(jobs) >= 2:
            jobs[-2].result()  # at most two batches in flight per camera: bounded memory
        batch, enc = self._batches.pop(key)[:n], self._encoders[key]
        self._submit(key, self._encode_batch, key, enc, batch)

    def _submit(self, key: str, fn, *args) -> None:
        """Run fn(*args) on the camera's lane (in order), or here for a camera encoded in this thread."""
        if not self.threaded(key):
            done: Future = Future()
            done.set_result(fn(*args))
            self._jobs[key].append(done)
            return
        if key not in self._lanes:
            self._lanes[key] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"encode-{key}")
        self._jobs[key].append(self._lanes[key].submit(fn, *args))
