"""Depth maps as video, the way lerobot 0.6.1 stores them.

A depth feature is declared `Feature("video", (H, W, 1), info={"is_depth_map": True})`
(optionally with `depth_min`, `depth_max`, `shift`, `use_log` in the info) and given
to the writer as float depth in metres, (T, H, W) or (T, H, W, 1). Each value is
quantized to a 12-bit code (logarithmic by default, lerobot's formula and defaults),
stored losslessly as HEVC gray12le, and turned back into metres on read. Statistics
are exact over the stored (quantized) depths: a 4096-bin code histogram per episode.

Readers that decode every video as 8-bit RGB (lerobot <= 0.3, openpi's and GR00T's loaders)
get depth packed into RGB instead (`pack_rgb12`, "rgb12"): R = code >> 4 and G = code & 15,
B = 0, stored losslessly like a segmentation map; `unpack_rgb12` turns such frames back into
metres. The high byte goes to R so that R alone is an 8-bit depth image (16 codes a level)
that a viewer or a resizing filter treats sensibly; the low bits, G, only refine it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from demoforge.dataset import segmentation
from demoforge.dataset.layout import QUANTILES
from demoforge.errors import DatasetError

QMAX = 4095  # 12-bit codes
PIX_FMT = "gray12le"
PACKING = "rgb12"  # the info block's `depth_packing` of depth packed into 8-bit RGB
PACKING_FORMULA = "code = 16 * R + G (R = code >> 4, G = code & 15, B = 0)"


@dataclass(frozen=True)
class DepthCoding:
    """The depth quantizer; its fields are written into the feature's info block."""

    depth_min: float = 0.01  # depth at code 0 [m]
    depth_max: float = 10.0  # depth at code 4095 [m]
    shift: float = 3.5  # offset before the log [m]
    use_log: bool = True  # logarithmic (finer near the camera) or linear codes

    def __post_init__(self) -> None:
        problems = []
        if not (0 <= self.depth_min < self.depth_max) or not math.isfinite(self.depth_max):
            problems.append(f"need 0 <= depth_min < depth_max, got {self.depth_min}, {self.depth_max}")
        if self.use_log and self.depth_min + self.shift <= 0:
            problems.append(f"depth_min + shift must be > 0 for log coding, got {self.depth_min + self.shift}")
        if problems:
            raise DatasetError("depth coding: " + "; ".join(problems))

    @staticmethod
    def from_info(info: dict[str, Any] | None) -> "DepthCoding":
        info = info or {}
        raw = {k: info.get(k, info.get(f"video.{k}")) for k in ("depth_min", "depth_max", "shift", "use_log")}
        return DepthCoding(**{k: v for k, v in raw.items() if v is not None})

    def _bounds(self) -> tuple[float, float]:
        if self.use_log:
            return math.log(self.depth_min + self.shift), math.log(self.depth_max + self.shift)
        return self.depth_min, self.depth_max

    def quantize(self, depth_m: np.ndarray) -> np.ndarray:
        """Metres -> uint16 codes in [0, 4095] (float32 arithmetic, as lerobot)."""
        d = np.asarray(depth_m, dtype=np.float32)
        lo, hi = self._bounds()
        x = np.log(d + np.float32(self.shift)) if self.use_log else d
        norm = (x - np.float32(lo)) / np.float32(hi - lo)
        return np.rint(norm * QMAX).clip(0, QMAX).astype(np.uint16)

    def dequantize(self, codes: np.ndarray) -> np.ndarray:
        """uint16 codes -> float32 metres."""
        lo, hi = self._bounds()
        x = np.asarray(codes, dtype=np.float64) / QMAX * (hi - lo) + lo
        return (np.exp(x) - self.shift if self.use_log else x).astype(np.float32)

    def info_block(self, *, fps: int, height: int, width: int, g: int) -> dict[str, Any]:
        return {
            "video.height": height, "video.width": width, "video.codec": "hevc", "video.pix_fmt": PIX_FMT,
            "video.fps": fps, "video.channels": 1, "has_audio": False, "video.g": g, "video.crf": None,
            "video.preset": None, "video.fast_decode": 0, "video.video_backend": "pyav",
            "video.extra_options": {"x265-params": "lossless=1"},
            "video.depth_min": self.depth_min, "video.depth_max": self.depth_max, "video.shift": self.shift,
            "video.use_log": self.use_log, "is_depth_map": True, "depth_unit": "m",
        }


def is_depth(info: dict[str, Any] | None) -> bool:
    return bool((info or {}).get("is_depth_map", False))


def is_packed(info: dict[str, Any] | None) -> bool:
    """Whether a video feature holds depth codes packed into RGB (`pack_rgb12`)."""
    return (info or {}).get("depth_packing") == PACKING


def metres_formula(coding: DepthCoding) -> str:
    """How a 12-bit code becomes metres under `coding` (what `DepthCoding.dequantize` computes)."""
    if coding.use_log:
        return (f"metres = exp(code / {QMAX} * (log(depth_max + shift) - log(depth_min + shift)) "
                f"+ log(depth_min + shift)) - shift, with depth_min = {coding.depth_min}, "
                f"depth_max = {coding.depth_max}, shift = {coding.shift}")
    return f"metres = depth_min + code / {QMAX} * (depth_max - depth_min), with depth_min = " \
           f"{coding.depth_min}, depth_max = {coding.depth_max}"


def pack_rgb12(codes: np.ndarray) -> np.ndarray:
    """(..., H, W) 12-bit codes -> (..., H, W, 3) uint8 RGB: R = code >> 4, G = code & 15, B = 0."""
    c = np.asarray(codes)
    if c.size and (c.min() < 0 or c.max() > QMAX):
        raise DatasetError(f"depth codes must lie in [0, {QMAX}], got [{c.min()}, {c.max()}]")
    c = c.astype(np.uint16)
    out = np.zeros((*c.shape, 3), np.uint8)
    out[..., 0] = c >> 4
    out[..., 1] = c & 15
    return out


def unpack_rgb12_codes(frames: np.ndarray, *, where: str = "depth frames") -> np.ndarray:
    """(..., H, W, 3) uint8 RGB packed by `pack_rgb12` -> (..., H, W) uint16 codes.

    DatasetError naming `where` when a pixel cannot come from `pack_rgb12` (G > 15 or B != 0):
    the frames were decoded or re-encoded lossily, and their codes are lost."""
    f = np.asarray(frames)
    if f.dtype != np.uint8 or f.ndim < 3 or f.shape[-1] != 3:
        raise DatasetError(f"{where}: packed depth must be uint8 (..., H, W, 3) RGB, got {f.dtype} {f.shape}; "
                           "decode the video as rgb24 (lerobot's float frames: round(255 * x) first)")
    bad = (f[..., 1] > 15) | (f[..., 2] != 0)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise DatasetError(f"{where}: pixel {list(at)} is RGB {f[at].tolist()}, which no 12-bit code packs to "
                           f"({PACKING_FORMULA}); the video was decoded or re-encoded lossily: decode the exported "
                           "mp4 itself, losslessly (PyAV frame.to_ndarray(format='rgb24'))")
    return (f[..., 0].astype(np.uint16) << 4) | f[..., 1]


def unpack_rgb12(frames: np.ndarray, coding: DepthCoding, *, where: str = "depth frames") -> np.ndarray:
    """(..., H, W, 3) uint8 RGB packed by `pack_rgb12` -> (..., H, W) float32 depth [m].

    `coding`: the feature's, `DepthCoding.from_info(info["features"][key]["info"])`."""
    return coding.dequantize(unpack_rgb12_codes(frames, where=where))


def packed_histogram(code_hist: np.ndarray) -> np.ndarray:
    """(1, 4096) code counts -> the (3, 256) RGB pixel counts of the same pixels packed by `pack_rgb12`."""
    h = np.asarray(code_hist, dtype=np.int64).reshape(QMAX + 1)
    out = np.zeros((3, 256), np.int64)
    out[0] = h.reshape(256, 16).sum(axis=1)
    out[1, :16] = h.reshape(256, 16).sum(axis=0)
    out[2, 0] = h.sum()
    return out


def packed_info_block(coding: DepthCoding, *, fps: int, height: int, width: int, g: int) -> dict[str, Any]:
    """The info block of a depth feature packed into RGB: a lossless gbrp video (as segmentation maps)
    that is not a lerobot depth map (`is_depth_map` False: its readers decode RGB), with how to unpack it."""
    return {
        "video.height": height, "video.width": width, "video.codec": "hevc",
        "video.pix_fmt": segmentation.PIX_FMT, "video.fps": fps, "video.channels": 3, "has_audio": False, "video.g": g, "video.crf": None,
        "video.preset": None, "video.fast_decode": 0, "video.video_backend": "pyav",
        "video.extra_options": {"x265-params": "lossless=1"}, "is_depth_map": False,
        "depth_packing": PACKING, "depth_min": coding.depth_min, "depth_max": coding.depth_max,
        "shift": coding.shift, "use_log": coding.use_log, "depth_unit": "m",
        "depth_formula": f"{PACKING_FORMULA}; {metres_formula(coding)}; demoforge.dataset.depth.unpack_rgb12",
    }


def code_histogram(codes: np.ndarray) -> np.ndarray:
    """(..., H, W) uint16 codes -> (1, 4096) counts."""
    return np.bincount(np.asarray(codes).reshape(-1), minlength=QMAX + 1)[None, :].astype(np.int64)


def depth_stats(hist: np.ndarray, frame_count: int, coding: DepthCoding) -> dict[str, Any]:
    """Stats [m] of the stored depths from a (1, 4096) code histogram, shaped [1][1][1]."""
    h = np.asarray(hist, dtype=np.int64)[0]
    values = coding.dequantize(np.arange(QMAX + 1)).astype(np.float64)
    total = int(h.sum())
    nz = np.nonzero(h)[0]
    mean = float((h * values).sum() / total)
    std = math.sqrt(float((h * (values - mean) ** 2).sum() / total))
    cum = np.cumsum(h)
    out: dict[str, Any] = {"min": values[nz[0]], "max": values[nz[-1]], "mean": mean, "std": std}
    for name, q in QUANTILES.items():
        pos = q * (total - 1)
        lo = int(math.floor(pos))
        a = values[int(np.searchsorted(cum, lo, side="right"))]
        b = values[int(np.searchsorted(cum, min(lo + 1, total - 1), side="right"))]
        out[name] = a + (pos - lo) * (b - a)
    stats = {k: [[[float(v)]]] for k, v in out.items()}
    stats["count"] = [int(frame_count)]
    return {k: stats[k] for k in ("min", "max", "mean", "std", "count", *QUANTILES)}
