"""Camera streams of a bake: copy packets when nothing changes, else decode-decimate-encode
(depth and segmentation maps losslessly: their values are data, not pictures).

Frames are decoded from the source mp4 in order, the ones at kept ticks are encoded as
they come (nothing is staged as images, memory stays a few frames per stream), and the
fresh segment is handed to the writer as an EncodedVideo, whose packets it copies.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from fractions import Fraction
from pathlib import Path
from typing import TypeVar

import av
from av.video.reformatter import VideoReformatter
from av.video.frame import PictureType
import numpy as np

from demoforge.convert.episode import BakeError, CameraRef
from demoforge.dataset import segmentation
from demoforge.dataset.decode import TOLERANCE_S
from demoforge.dataset.depth import PIX_FMT, is_depth
from demoforge.dataset.layout import Feature
from demoforge.dataset.remux import EncodedVideo
from demoforge.dataset.video import SegmentEncoder, VideoSettings
from demoforge.dataset.yuv import plane_histogram
from demoforge.dataset.writer_config import video_info

T = TypeVar("T")

# Encoder settings that must agree between source stream and bake for packets to be copied.
STREAM_KEYS = ("video.codec", "video.pix_fmt", "video.g", "video.crf")
DEPTH_CODING_KEYS = ("depth_min", "depth_max", "shift", "use_log")  # a depth map's quantizer (dataset.depth)


def target_info(cam: CameraRef, out: Feature, settings: VideoSettings, fps: int) -> dict:
    """The info block the bake's writer gives camera `cam` (output feature `out`) at `fps`."""
    return video_info(cam.key, out, fps=fps, video=settings)


def is_exact(out: Feature) -> bool:
    """Whether output feature `out` is stored losslessly (a depth or segmentation map): its
    frames are carried as decoded, never through an RGB encoder."""
    return is_depth(out.info) or bool((out.info or {}).get(segmentation.FLAG))


def can_copy(cam: CameraRef, out: Feature, settings: VideoSettings, fps: int) -> bool:
    """True when the source stream already is what the bake would encode at `fps`.

    The speed preset counts only when one is asked for: it changes how hard the encoder
    worked, not what a decoder gets (e.g. the render stage encodes with "veryfast"). A depth
    map's coding must match too (the bake carries the source's)."""
    have = cam.feature.info or {}
    want = target_info(cam, out, settings, fps)
    keys = STREAM_KEYS + (("video.preset",) if settings.preset is not None and not is_exact(out) else ())
    if is_depth(out.info):
        keys += tuple(f"video.{k}" for k in DEPTH_CODING_KEYS)
    return int(have.get("video.fps", fps)) == fps and all(have.get(k) == want[k] for k in keys)


def copied(cam: CameraRef) -> EncodedVideo:
    """The episode's packets as they are in the source."""
    return EncodedVideo(path=cam.path, from_timestamp=cam.from_timestamp, to_timestamp=cam.to_timestamp,
                        histogram=cam.histogram)


def _open_encoder(out: Path, settings: VideoSettings, fps: int, height: int, width: int):
    container = av.open(str(out), mode="w", format="mp4")
    stream = container.add_stream(settings.encoder, rate=fps, options=settings.codec_options(fps, height, width))
    stream.width, stream.height, stream.pix_fmt = width, height, settings.pix_fmt
    stream.time_base = stream.codec_context.time_base = Fraction(1, fps)
    return container, stream


def reencode_exact(cam: CameraRef, feature: Feature, ticks: np.ndarray, *, source_fps: int, out: Path,
                   settings: VideoSettings, fps: int) -> EncodedVideo:
    """Encode the frames at native `ticks` of a depth or segmentation map `cam` losslessly into
    `out` at `fps`: depth as the source's 12-bit codes (never through metres, so no code moves),
    segmentation as the decoded RGB colours. Streaming, a frame at a time."""
    h, w = cam.feature.shape[0], cam.feature.shape[1]
    depth = is_depth(feature.info)
    if depth and (cam.feature.info or {}).get("video.pix_fmt", PIX_FMT) != PIX_FMT:
        raise BakeError(f"{cam.path}: depth map {cam.key} is stored as {cam.feature.info.get('video.pix_fmt')!r}, "
                        f"not lerobot's {PIX_FMT!r} 12-bit codes; bake leaves it out with --cams")
    enc = SegmentEncoder(out, settings=settings, fps=fps, height=h, width=w, depth=depth, segmentation=not depth)
    try:
        for frame in _kept_frames(cam, ticks, source_fps=source_fps):
            if depth and frame.format.name != PIX_FMT:
                raise BakeError(f"{cam.path}: depth map {cam.key} decodes as {frame.format.name!r}, not {PIX_FMT!r}")
            enc.add(frame.to_ndarray() if depth else frame.to_ndarray(format="rgb24"))
        enc.close()
    except BaseException:
        enc.abort()
        raise
    return EncodedVideo(path=out, from_timestamp=0.0, to_timestamp=enc.count / fps, histogram=enc.histogram)


def reencode(cam: CameraRef, ticks: np.ndarray, *, source_fps: int, out: Path, settings: VideoSettings,
             fps: int) -> EncodedVideo:
    """Encode the frames at native `ticks` (sorted) of `cam` into `out` at `fps`, streaming.

    Three threads share the work: one decodes and picks the kept frames (a few ahead of the
    encoder: with the encoder on the decoding thread, FFmpeg's decoder threads idled while it
    encoded and the two ran nearly one after the other), this one encodes them as they are
    (no RGB round trip), and a third takes the exact pixel histogram of their RGB views, a
    few frames at a time. Memory stays a few decoded frames."""
    h, w = cam.feature.shape[0], cam.feature.shape[1]
    container, stream = _open_encoder(out, settings, fps, h, w)
    counter = _PixelCounter(h, w)
    count = 0
    try:
        for frame in _ahead(_kept_frames(cam, ticks, source_fps=source_fps), depth=_AHEAD):
            counter.add(frame)
            if frame.format.name != settings.pix_fmt:
                frame = frame.reformat(format=settings.pix_fmt)
            frame.pts, frame.time_base = count, stream.codec_context.time_base
            frame.pict_type = PictureType.NONE  # let the encoder place keyframes, not the source's GOP
            container.mux(stream.encode(frame))
            count += 1
        container.mux(stream.encode(None))
        container.close()
        hist = counter.result()
    except BaseException:
        counter.cancel()
        try:
            container.close()
        except Exception:  # noqa: BLE001 - the partial segment is deleted anyway
            pass
        out.unlink(missing_ok=True)
        raise
    return EncodedVideo(path=out, from_timestamp=0.0, to_timestamp=count / fps, histogram=hist)


_AHEAD = 4  # decoded frames kept ahead of the encoder
_COUNT_BATCH = 4  # frames per histogram job (fewer hand-offs to the counting thread)


def _kept_frames(cam: CameraRef, ticks: np.ndarray, *, source_fps: int) -> Iterator[av.VideoFrame]:
    """The decoded frames of `cam` at native `ticks` (sorted), in order; raises BakeError when
    one is missing or the stream does not match the feature's shape."""
    h, w = cam.feature.shape[0], cam.feature.shape[1]
    want = iter(ticks.tolist())
    nxt = next(want, None)
    with av.open(str(cam.path)) as src:
        istream = src.streams.video[0]
        istream.thread_type = "AUTO"
        src.seek(max(0, int(cam.from_timestamp / istream.time_base) - 1), stream=istream, backward=True)
        num, den = istream.time_base.numerator, istream.time_base.denominator  # int / int: float(pts * time_base)
        for frame in src.decode(istream):
            if nxt is None:
                break
            if frame.pts is None:
                continue
            t = frame.pts * num / den
            if t < cam.from_timestamp - TOLERANCE_S:
                continue
            k = round((t - cam.from_timestamp) * source_fps)
            if k < nxt:
                continue
            if k > nxt:
                raise BakeError(f"{cam.path}: {cam.key} has no frame for tick {nxt} (next frame is tick {k})")
            if (frame.width, frame.height) != (w, h):
                raise BakeError(f"{cam.path}: {cam.key} frames are {frame.width}x{frame.height}, "
                                f"info.json says {w}x{h}")
            yield frame
            nxt = next(want, None)
    if nxt is not None:
        raise BakeError(f"{cam.path}: {cam.key} ends before tick {nxt} of the episode at "
                        f"{cam.from_timestamp:.4f} s; the video is shorter than the data")


def _ahead(items: Iterator[T], *, depth: int) -> Iterator[T]:
    """Yield `items`, produced on a thread of their own up to `depth` ahead; the producer's
    exception is raised here, in order. Closing this generator stops (and closes) the producer."""
    slots: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry) -> bool:
        while not stop.is_set():
            try:
                slots.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((True, item)):
                    return
            put((False, None))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            put((False, exc))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()  # a generator is closed on the thread that ran it

    worker = threading.Thread(target=produce, name="bake-decode", daemon=True)
    worker.start()
    try:
        while True:
            ok, value = slots.get()
            if not ok:
                if value is not None:
                    raise value
                return
            yield value
    finally:
        stop.set()
        worker.join()


class _PixelCounter:
    """Exact RGB pixel counts of decoded frames, taken on a side thread a few frames at a time
    (each frame's planar RGB from swscale, counted where it lies by plane_histogram)."""

    def __init__(self, height: int, width: int):
        self._lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bake-hist")
        # Its own swscale context: `frame.reformat` caches one per frame, and the encoding thread
        # reformats the same frames at the same time (two threads in one SwsContext hung a test).
        self._reformatter = VideoReformatter()
        self._size = (height, width)
        self._batch: list[av.VideoFrame] = []
        self._jobs: list[Future] = []
        self._hist = np.zeros((3, 256), np.int64)

    def add(self, frame: av.VideoFrame) -> None:
        self._batch.append(frame)
        if len(self._batch) == _COUNT_BATCH:
            self._submit()

    def _submit(self) -> None:
        if len(self._jobs) >= 2:  # bounded: at most two batches of decoded frames wait here
            self._hist += self._jobs.pop(0).result()
        self._jobs.append(self._lane.submit(self._count, self._batch))
        self._batch = []

    def _count(self, frames: list[av.VideoFrame]) -> np.ndarray:
        h, w = self._size
        out = np.zeros((3, 256), np.int64)
        for frame in frames:
            # planar G, B, R from swscale: the values of the rgb24 view decoders give
            # (tests/convert/test_frames.py), counted in place (each row `line_size` bytes apart)
            rgb = self._reformatter.reformat(frame, format="gbrp")
            for c, plane in zip((1, 2, 0), rgb.planes):
                out[c] += plane_histogram(plane, w, h, plane.line_size)
        return out

    def result(self) -> np.ndarray:
        """The counts of every frame added; ends the counter."""
        if self._batch:
            self._submit()
        try:
            for job in self._jobs:
                self._hist += job.result()
        finally:
            self._lane.shutdown(wait=True)
        return self._hist

    def cancel(self) -> None:
        for job in self._jobs:
            job.cancel()
        self._lane.shutdown(wait=True)
