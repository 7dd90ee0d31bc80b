"""Depth maps as video, the way lerobot 0.6.1 stores them.

A depth feature is declared `Feature("video", (H, W, 1), info={"is_depth_map": True})`
(optionally with `depth_min`, `depth_max`, `shift`, `use_log` in the info) and given
to the writer as float depth in metres, (T, H, W) or (T, H, W, 1). Each value is
quantized to a 12-bit code (logarithmic by default, lerobot's formula and defaults),
stored losslessly as HEVC gray12le, and turned back into metres on read. Statistics
are exact over the stored (quantized) depths: a 4096-bin code histogram per episode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from demoforge.dataset.layout import QUANTILES
from demoforge.errors import DatasetError

QMAX = 4095  # 12-bit codes
PIX_FMT = "gray12le"


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
