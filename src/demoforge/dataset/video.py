"""Video settings and the streaming encoder (PyAV, its bundled FFmpeg).

Each episode is encoded into its own short segment as frames arrive (no images are
staged on disk); segments are later joined into the dataset's mp4 files by remuxing
packets, never by re-encoding. This is how lerobot builds its files too (encode an
episode, concatenate), and it is what makes a finished episode durable on its own.
"""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from demoforge.dataset import segmentation as seg
from demoforge.dataset.depth import code_histogram
from demoforge.dataset.stats import pixel_histogram
from demoforge.dataset.tables import fsync_file
from demoforge.errors import DatasetError

logging.getLogger("libav").setLevel(logging.ERROR)
os.environ.setdefault("SVT_LOG", "1")  # SVT-AV1 prints a banner per encoder otherwise

# info-block codec name -> FFmpeg encoder
ENCODERS = {"h264": "libx264", "hevc": "libx265", "av1": "libsvtav1"}
_CODEC_ALIASES = {"libx264": "h264", "libx265": "hevc", "libsvtav1": "av1"}
MAX_CRF = {"h264": 51, "hevc": 51, "av1": 63}  # the encoders' own ranges
MAX_GOP_S = 60.0  # keyframe interval bound [s]


@functools.lru_cache(maxsize=None)
def _pixel_formats(encoder: str) -> list[str]:
    """The pixel formats `encoder` accepts (empty when PyAV cannot say)."""
    try:
        return [f.name for f in av.codec.Codec(encoder, "w").video_formats or ()]
    except Exception:  # noqa: BLE001 - an encoder missing from this FFmpeg build: the writer reports it
        return []


@dataclass(frozen=True)
class VideoSettings:
    """How camera features are encoded; written into each video feature's `info` block."""

    codec: str = "h264"  # "h264", "hevc" or "av1" (libsvtav1); encoder names are accepted too
    crf: int = 23  # constant rate factor; lower is better quality and larger files
    gop_s: float = 0.25  # keyframe interval [s]; g = max(1, round(fps * gop_s))
    g: int | None = None  # explicit keyframe interval [frames]; overrides gop_s
    pix_fmt: str = "yuv420p"
    preset: int | str | None = None  # codec-specific speed preset (x264: "veryfast", svtav1: 0-13)
    fast_decode: int = 0  # svtav1 fast-decode level / x264 tune=fastdecode when > 0
    extra_options: dict[str, str] = field(default_factory=dict)  # merged last, never override the above

    def __post_init__(self) -> None:
        codec = _CODEC_ALIASES.get(self.codec, self.codec)
        if codec not in ENCODERS:
            raise DatasetError(
                f"video settings: codec {self.codec!r} is not supported; use one of {sorted(ENCODERS)}"
            )
        object.__setattr__(self, "codec", codec)
        if self.g is not None and self.g < 1:
            raise DatasetError(f"video settings: g={self.g} must be >= 1 frame")
        if self.g is None and not 0 < self.gop_s <= MAX_GOP_S:
            raise DatasetError(f"video settings: gop_s={self.gop_s} must be in (0, {MAX_GOP_S:g}] seconds")
        if not (isinstance(self.crf, int) and 0 <= self.crf <= MAX_CRF[codec]):
            raise DatasetError(f"video settings: crf={self.crf!r} must be an integer in [0, {MAX_CRF[codec]}] for "
                               f"{codec} (lower is better quality; 23 is the default)")
        formats = _pixel_formats(ENCODERS[codec])
        if formats and self.pix_fmt not in formats:
            raise DatasetError(f"video settings: pix_fmt {self.pix_fmt!r} is not one {ENCODERS[codec]} encodes; use "
                               f"one of {', '.join(formats)}")

    @staticmethod
    def lerobot_default() -> "VideoSettings":
        """lerobot's own default: libsvtav1, crf 30, g = 2, preset 12."""
        return VideoSettings(codec="av1", crf=30, g=2, preset=12)

    @property
    def encoder(self) -> str:
        return ENCODERS[self.codec]

    def gop(self, fps: int) -> int:
        return self.g if self.g is not None else max(1, round(fps * self.gop_s))

    def codec_options(self, fps: int) -> dict[str, str]:
        opts = {"g": str(self.gop(fps)), "crf": str(self.crf)}
        if self.preset is not None:
            opts["preset"] = str(self.preset)
        if self.codec == "av1":
            opts["svtav1-params"] = f"fast-decode={max(0, min(2, self.fast_decode))}"
        else:
            # No B-frames: pts == dts, so segments join without edit lists and frames are
            # found by timestamp exactly.
            opts["bf"] = "0"
            # One encoder thread: with frame threads x264 gave different bytes under CPU
            # load (measured).
            opts["threads"] = "1"
            if self.codec == "h264":
                # libx264 chooses some SIMD routines (macroblock-tree rate control) at run time,
                # and identical encodes in one process came out different a few times in a
                # hundred, often when other threads were busy; cpu-independent fixes the choice
                # (same file size, about 5% more CPU). A user's x264-params are appended.
                user = self.extra_options.get("x264-params")
                opts["x264-params"] = "cpu-independent=1" + (f":{user}" if user else "")
            if self.fast_decode:
                opts["tune"] = "fastdecode"
        for key, value in self.extra_options.items():
            opts.setdefault(key, str(value))
        return opts

    def info_block(self, *, fps: int, height: int, width: int, is_depth_map: bool = False) -> dict[str, Any]:
        """The `info` block lerobot 0.6.1 writes for a video feature."""
        return {
            "video.height": height,
            "video.width": width,
            "video.codec": self.codec,
            "video.pix_fmt": self.pix_fmt,
            "video.fps": fps,
            "video.channels": 3,
            "has_audio": False,
            "video.g": self.gop(fps),
            "video.crf": self.crf,
            "video.preset": self.preset,
            "video.fast_decode": self.fast_decode,
            "video.video_backend": "pyav",
            "video.extra_options": dict(self.extra_options),
            "is_depth_map": is_depth_map,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "codec": self.codec, "crf": self.crf, "gop_s": self.gop_s, "g": self.g, "pix_fmt": self.pix_fmt,
            "preset": self.preset, "fast_decode": self.fast_decode, "extra_options": dict(self.extra_options),
        }

    @staticmethod
    def from_json(raw: dict[str, Any]) -> "VideoSettings":
        return VideoSettings(**raw)


# BT.601 limited range in 8-bit fixed point, what FFmpeg's swscale uses for RGB -> YUV by
# default (and what decoders assume for untagged streams): rows give Y, Cb, Cr per [R, G, B].
_RGB_TO_YUV = ((66, 129, 25), (-38, -74, 112), (112, -94, -18))
_BATCH_PIXELS = 2**20  # pixels per conversion batch: larger batches gain nothing, and cost memory
_MAX_BATCH = 16  # frames per conversion batch (more only saves Python calls on tiny frames)
_PAIR_MIN_PIXELS = 2**17  # below this a 65536-bin pair histogram costs more than it saves


class Yuv420Converter:
    """RGB -> yuv420p planes, and the exact RGB pixel histogram of the same frames, for
    batches of up to `capacity` frames of one size.

    Done here rather than by swscale: swscale's SIMD reads past the end of a row-aligned
    numpy frame, and the encoder then saw uninitialized bytes (different output bytes on
    about one run in ten, measured). Several frames per call is cheaper, and every
    intermediate lives in buffers kept between batches: fresh temporaries of this size are
    new memory mappings whose pages the kernel zeroes on first touch, which cost about as
    much as the arithmetic (measured on a 2-core Xeon). Both results come from one planar
    copy of the frames (the channel transposition was the largest single cost). Not
    thread-safe: one converter per encoding thread."""

    def __init__(self, height: int, width: int, capacity: int | None = None):
        if capacity is None:
            capacity = max(1, min(_MAX_BATCH, _BATCH_PIXELS // max(1, height * width)))
        n, h, w = capacity, height, width
        self.capacity, self.height, self.width = n, h, w
        self._planes = np.empty((3, n, h, w), np.uint8)  # R, G, B planes of the batch
        self._y16 = np.empty((n, h, w), np.uint16)
        self._t16 = np.empty((n, h, w), np.uint16)
        self._y = np.empty((n, h, w), np.uint8)
        self._rows = np.empty((3, n, h // 2, w), np.uint16)  # sums of row pairs
        self._sums = np.empty((3, n, h // 2, w // 2), np.int32)  # sums of 2x2 blocks
        self._p32 = np.empty((n, h // 2, w // 2), np.int32)
        self._t32 = np.empty((n, h // 2, w // 2), np.int32)
        self._uv = np.empty((2, n, h // 2, w // 2), np.uint8)
        self._pairs = np.empty(n * h * w // 2, np.intp)  # bincount's own input type: no copy inside
        self._count = 0

    def convert(self, rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(T, H, W, 3) uint8 RGB, T <= capacity -> Y (T, H, W), Cb and Cr (T, H/2, W/2) uint8.

        The planes are views into the converter's buffers, valid until the next call."""
        n = len(rgb)
        if n > self.capacity or rgb.shape[1:] != (self.height, self.width, 3):
            raise ValueError(f"{rgb.shape} frames do not fit a converter of {self.capacity} x "
                             f"{self.height} x {self.width}")
        # Integer arithmetic only (a float matmul goes through BLAS, whose kernels round
        # differently depending on how it splits the work across threads), on contiguous
        # uint8 channel planes widened inside each ufunc (a widening copy of the strided
        # channels is ~3x slower). uint16 holds the luma sums (at most 60324) and the 2x2
        # chroma sums (at most 1020); results lie in [16, 240] by construction: no clipping.
        x = self._planes[:, :n]
        np.copyto(x, np.moveaxis(rgb, -1, 0))
        self._count = n
        cy, cu, cv = _RGB_TO_YUV
        y, term = self._y16[:n], self._t16[:n]
        np.multiply(x[0], cy[0], out=y, dtype=np.uint16)
        np.multiply(x[1], cy[1], out=term, dtype=np.uint16)
        y += term
        np.multiply(x[2], cy[2], out=term, dtype=np.uint16)
        y += term
        y += 128 + (16 << 8)
        np.right_shift(y, 8, out=self._y[:n], casting="unsafe")
        # 2x2 sums (chroma of the mean colour): row pairs, then column pairs
        rows, s = self._rows[:, :n], self._sums[:, :n]
        np.add(x[:, :, 0::2], x[:, :, 1::2], out=rows, dtype=np.uint16)
        np.add(rows[..., 0::2], rows[..., 1::2], out=s, dtype=np.int32)
        p, term = self._p32[:n], self._t32[:n]
        for plane, c in zip(self._uv[:, :n], (cu, cv)):
            np.multiply(s[0], c[0], out=p)
            np.multiply(s[1], c[1], out=term)
            p += term
            np.multiply(s[2], c[2], out=term)
            p += term
            p += 512 + (128 << 10)
            p >>= 10
            np.copyto(plane, p, casting="unsafe")
        return self._y[:n], self._uv[0, :n], self._uv[1, :n]

    def histogram(self) -> np.ndarray:
        """(3, 256) int64 counts per channel of the frames of the last `convert`."""
        m = self._count * self.height * self.width
        return planar_histogram(self._planes[:, :self._count].reshape(3, m), self._pairs)


def planar_histogram(planes: np.ndarray, pairs: np.ndarray | None = None) -> np.ndarray:
    """(3, M) uint8 channel planes, each row contiguous -> (3, 256) int64 counts per channel.

    `pairs`: an intp scratch buffer of at least M // 2 values, reused between calls (a fresh
    one of this size costs page faults)."""
    m = planes.shape[1]
    if m < _PAIR_MIN_PIXELS:
        return np.stack([np.bincount(planes[c], minlength=256) for c in range(3)]).astype(np.int64)
    # bincount first casts its input to intp; counting a channel's bytes two at a time
    # (65536 bins, then summed per byte) halves that cost.
    half = m // 2
    pairs = np.empty(half, np.intp) if pairs is None else pairs[:half]
    out = np.zeros((3, 256), np.int64)
    for c in range(3):
        np.copyto(pairs, planes[c, :2 * half].view(np.uint16))
        counts = np.bincount(pairs, minlength=65536).reshape(256, 256)
        out[c] = counts.sum(axis=0) + counts.sum(axis=1)
        if 2 * half < m:  # an odd pixel count leaves one pixel
            out[c, planes[c, -1]] += 1
    return out


def rgb_to_yuv420p(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(..., H, W, 3) uint8 RGB -> Y (..., H, W), Cb and Cr (..., H/2, W/2) uint8 planes
    (see Yuv420Converter; this one allocates a converter for the call)."""
    rgb = np.asarray(rgb)
    lead, (h, w) = rgb.shape[:-3], rgb.shape[-3:-1]
    frames = rgb.reshape(-1, h, w, 3)
    y, u, v = Yuv420Converter(h, w, capacity=len(frames)).convert(frames)
    return y.reshape(*lead, h, w), u.reshape(*lead, h // 2, w // 2), v.reshape(*lead, h // 2, w // 2)


def _write_plane(plane, values: np.ndarray) -> None:
    """Copy a 2-D array into a frame plane and zero the row padding (no stray bytes)."""
    h, w = values.shape
    rows = np.frombuffer(plane, dtype=values.dtype).reshape(-1, plane.line_size // values.itemsize)
    rows[:h, :w] = values
    rows[:h, w:] = 0


class SegmentEncoder:
    """Encodes one episode of one camera into a standalone mp4 segment, frame by frame, and
    counts what it encodes: `histogram` holds (3, 256) RGB pixel counts, or (1, 4096) code
    counts for a depth map, of every frame added so far. A segmentation map
    (`demoforge.dataset.segmentation`) is RGB stored losslessly."""

    def __init__(self, path: Path, *, settings: VideoSettings, fps: int, height: int, width: int,
                 depth: bool = False, segmentation: bool = False):
        self.path = path
        self.count = 0
        self.depth = depth
        self.histogram = np.zeros((1, 4096) if depth else (3, 256), np.int64)
        self._container = av.open(str(path), mode="w", format="mp4")
        if depth:  # 12-bit depth codes, lossless HEVC, as lerobot's DepthEncoderConfig
            options, encoder, pix_fmt = seg.encoder_options(settings.gop(fps)), "libx265", "gray12le"
        elif segmentation:  # id colours, lossless HEVC in planar RGB
            options, encoder, pix_fmt = seg.encoder_options(settings.gop(fps)), seg.ENCODER, seg.PIX_FMT
        else:
            options, encoder, pix_fmt = settings.codec_options(fps), settings.encoder, settings.pix_fmt
        self._stream = self._container.add_stream(encoder, rate=fps, options=options)
        self._stream.width = width
        self._stream.height = height
        self._stream.pix_fmt = pix_fmt
        self._stream.time_base = Fraction(1, fps)
        self._stream.codec_context.time_base = Fraction(1, fps)
        self._yuv = Yuv420Converter(height, width) if pix_fmt == "yuv420p" else None

    def add(self, image: np.ndarray) -> None:
        """Encode one (H, W, 3) uint8 RGB frame, or one (H, W) uint16 depth-code frame."""
        self.add_frames(image[None])

    def add_frames(self, images: np.ndarray) -> None:
        """Encode (T, H, W, 3) uint8 RGB frames, or (T, H, W) uint16 depth codes, in order."""
        if self.depth:
            self.histogram += code_histogram(images)
            for image in images:
                h, w = image.shape
                frame = av.VideoFrame(w, h, "gray12le")
                _write_plane(frame.planes[0], image)
                self._encode(frame)
        elif self._stream.pix_fmt == seg.PIX_FMT:
            self.histogram += pixel_histogram(images)
            for image in images:
                h, w, _ = image.shape
                frame = av.VideoFrame(w, h, seg.PIX_FMT)  # planes G, B, R, written directly: no swscale
                for plane, channel in zip(frame.planes, (1, 2, 0)):
                    _write_plane(plane, np.ascontiguousarray(image[..., channel]))
                self._encode(frame)
        elif self._yuv is not None:
            _, h, w, _ = images.shape
            for start in range(0, len(images), self._yuv.capacity):
                planes = self._yuv.convert(images[start:start + self._yuv.capacity])
                self.histogram += self._yuv.histogram()
                for i in range(len(planes[0])):
                    frame = av.VideoFrame(w, h, "yuv420p")
                    for plane, values in zip(frame.planes, planes):
                        _write_plane(plane, values[i])
                    self._encode(frame)
        else:
            self.histogram += pixel_histogram(images)
            for image in images:
                self._encode(av.VideoFrame.from_ndarray(image, format="rgb24"))

    def _encode(self, frame: av.VideoFrame) -> None:
        frame.pts = self.count
        frame.time_base = self._stream.codec_context.time_base
        self._container.mux(self._stream.encode(frame))
        self.count += 1

    def close(self) -> None:
        if self._container is None:
            return
        self._container.mux(self._stream.encode(None))
        self._container.close()
        self._container = None

    def abort(self) -> None:
        if self._container is not None:
            try:
                self._container.close()
            except Exception:  # noqa: BLE001 - a broken partial segment is deleted anyway
                pass
            self._container = None
        self.path.unlink(missing_ok=True)


def _round_ratio(a: int, b: int) -> int:
    """round(a / b) for integers, b > 0, exactly as round(Fraction(a, b)) (halves to even),
    without building a Fraction per packet (those were most of the remux's CPU)."""
    q, r = divmod(a, b)
    return q + (2 * r > b or (2 * r == b and q % 2 == 1))


def concat_segments(segments: list[Path], out: Path, *, fps: int) -> list[tuple[float, float]]:
    """Join mp4 segments into `out` by remuxing packets (no re-encoding).

    Returns each segment's [from, to) timestamp span in `out` [s]. Segments must share
    codec parameters (they do when written with one VideoSettings)."""
    spans: list[tuple[float, float]] = []
    tmp = out.with_name(out.name + ".tmp")
    out.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(tmp), mode="w", format="mp4") as dst:
        ostream = None
        offset = 0  # frames already in `out`
        frame_tb = Fraction(1, fps)
        for segment in segments:
            with av.open(str(segment)) as src:
                istream = src.streams.video[0]
                if ostream is None:
                    ostream = dst.add_stream_from_template(istream, opaque=True)
                    ostream.time_base = frame_tb
                # rescale from the segment's time base to frames, then shift by offset
                num, den = istream.time_base.numerator * fps, istream.time_base.denominator
                n = 0
                for packet in src.demux(istream):
                    if packet.dts is None:
                        continue
                    packet.pts = _round_ratio(packet.pts * num, den) + offset
                    packet.dts = _round_ratio(packet.dts * num, den) + offset
                    packet.duration = 1  # one frame; left in the old time base it would read as hundreds
                    packet.time_base = frame_tb
                    packet.stream = ostream
                    dst.mux(packet)
                    n += 1
            spans.append((offset / fps, (offset + n) / fps))
            offset += n
    fsync_file(tmp)  # on disk before it takes the name: a crash leaves the old file or the whole new one
    tmp.replace(out)
    return spans


@dataclass(frozen=True)
class EncodedVideo:
    """An episode's frames already encoded in an mp4: copied by remuxing, never re-encoded."""

    path: Path  # source mp4
    from_timestamp: float  # episode start within the file [s]
    to_timestamp: float  # episode end (exclusive) [s]
    histogram: np.ndarray | None = None  # (3, 256) pixel counts when known; decoded otherwise


def extract_segment(video: EncodedVideo, out: Path, *, fps: int, depth: bool = False) -> tuple[int, np.ndarray]:
    """Copy one episode's packets into a standalone segment starting at t = 0.

    Returns the frame count and the episode's histogram: (3, 256) pixel counts, or
    (1, 4096) depth-code counts for a depth map."""
    hist = None if video.histogram is None else np.asarray(video.histogram, dtype=np.int64)
    if hist is None:
        hist = np.zeros((1, 4096) if depth else (3, 256), np.int64)
    tol = 1e-4
    count = 0
    with av.open(str(video.path)) as src, av.open(str(out), mode="w", format="mp4") as dst:
        istream = src.streams.video[0]
        ostream = dst.add_stream_from_template(istream, opaque=True)
        frame_tb = Fraction(1, fps)
        ostream.time_base = frame_tb
        src.seek(max(0, int(video.from_timestamp / istream.time_base) - 1), stream=istream, backward=True)
        # int / int is correctly rounded: the same floats as float(ts * time_base), without Fractions
        num, den = istream.time_base.numerator, istream.time_base.denominator
        first = None
        for packet in src.demux(istream):
            if packet.pts is None:
                continue
            t = packet.pts * num / den
            if t < video.from_timestamp - tol:
                continue
            if t >= video.to_timestamp - tol:
                break
            if first is None:
                first = t
                if not packet.is_keyframe:
                    raise DatasetError(
                        f"{video.path}: the episode at {video.from_timestamp:.4f} s does not start on a keyframe, "
                        "so it cannot be copied without re-encoding"
                    )
            frame_no = round((t - video.from_timestamp) * fps)
            packet.pts = frame_no
            packet.dts = frame_no if packet.dts is None else round(
                (packet.dts * num / den - video.from_timestamp) * fps)
            packet.duration = 1
            packet.time_base = frame_tb
            packet.stream = ostream
            dst.mux(packet)
            count += 1
    if video.histogram is None:
        with av.open(str(out)) as written:
            for frame in written.decode(video=0):
                hist += code_histogram(frame.to_ndarray()) if depth else pixel_histogram(
                    frame.to_ndarray(format="rgb24")[None])
    return count, hist
