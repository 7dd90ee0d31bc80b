"""Video settings and the streaming encoder (PyAV, its bundled FFmpeg).

Each episode is encoded into its own short segment as frames arrive (no images are
staged on disk); segments are later joined into the dataset's mp4 files by remuxing
packets, never by re-encoding (`dataset.remux`). This is how lerobot builds its files too
(encode an episode, concatenate), and it is what makes a finished episode durable on its
own. RGB frames reach the encoder as yuv420p planes converted here (`dataset.yuv`).
`EncodedVideo`, `concat_segments`, `extract_segment`, `Yuv420Converter`, `planar_histogram`
and `rgb_to_yuv420p` are importable from this module too.
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
from demoforge.dataset.remux import EncodedVideo, concat_segments, extract_segment
from demoforge.dataset.stats import pixel_histogram
from demoforge.dataset.yuv import Yuv420Converter, planar_histogram, rgb_to_yuv420p
from demoforge.errors import DatasetError

__all__ = [  # the remux and the conversion live in their own modules; their names are importable here too
    "ENCODERS", "MAX_CRF", "MAX_GOP_S", "EncodedVideo", "SegmentEncoder", "VideoSettings", "Yuv420Converter",
    "concat_segments", "extract_segment", "planar_histogram", "rgb_to_yuv420p",
]

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

    def codec_options(self, fps: int, height: int, width: int) -> dict[str, str]:
        """The encoder's options for `height` x `width` pictures at `fps`."""
        gop = self.gop(fps)
        if self.codec == "hevc":
            gop = seg.x265_gop(gop, height, width)  # intra-only where x265 reads unwritten memory
        opts = {"g": str(gop), "crf": str(self.crf)}
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
            else:
                # libx265 ignores `threads`: its own settings keep the bytes fixed, as for the
                # lossless maps (segmentation.X265_PARAMS: no pool, one frame thread, no weighted
                # prediction). A user's x265-params are appended.
                user = self.extra_options.get("x265-params")
                opts["x265-params"] = seg.X265_DETERMINISTIC + (f":{user}" if user else "")
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
            options, encoder, pix_fmt = seg.encoder_options(settings.gop(fps), height, width), "libx265", "gray12le"
        elif segmentation:  # id colours, lossless HEVC in planar RGB
            options, encoder, pix_fmt = seg.encoder_options(settings.gop(fps), height, width), seg.ENCODER, seg.PIX_FMT
        else:
            options, encoder, pix_fmt = settings.codec_options(fps, height, width), settings.encoder, settings.pix_fmt
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
