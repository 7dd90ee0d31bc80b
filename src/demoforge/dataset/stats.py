"""Exact feature statistics: min, max, mean, std (population), count and true quantiles.

Numeric features are reduced over the frame axis per dimension. Camera features are
per channel over every pixel of every frame, scaled to [0, 1] and shaped [3, 1, 1] as
lerobot writes them; because pixels are uint8, a 256-bin histogram per channel holds
them exactly, so per-episode histograms add up to exact dataset-wide quantiles.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image

from demoforge.dataset.keys import OBSERVATION_PREFIX
from demoforge.dataset.layout import QUANTILES, VISUAL_DTYPES

Stats = dict[str, Any]  # key -> nested lists, ready for JSON / parquet


def numeric_stats(values: np.ndarray) -> Stats:
    """Stats of a (T, n) or (T,) array over axis 0; each entry a list of n values."""
    values = np.asarray(values)
    if values.dtype == np.bool_:
        flags = values.reshape(len(values), -1)
        return bool_stats(np.count_nonzero(flags, axis=0), len(flags))
    x = np.asarray(values, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    out: Stats = {
        "min": x.min(axis=0).tolist(),
        "max": x.max(axis=0).tolist(),
        "mean": x.mean(axis=0).tolist(),
        "std": x.std(axis=0).tolist(),
        "count": [int(x.shape[0])],
    }
    qs = np.quantile(x, list(QUANTILES.values()), axis=0)
    for i, name in enumerate(QUANTILES):
        out[name] = qs[i].tolist()
    return out


def bool_stats(ones: np.ndarray, n: int) -> Stats:
    """Exact stats of n flags per dimension from the count of true ones, as numpy gives them
    for the same flags as 0.0/1.0: sorted, a dimension is n - ones zeros then ones ones."""
    ones = np.asarray(ones, dtype=np.int64)
    p = ones / n
    out: Stats = {
        "min": (ones == n).astype(np.float64).tolist(),
        "max": (ones > 0).astype(np.float64).tolist(),
        "mean": p.tolist(),
        "std": np.sqrt(p * (1.0 - p)).tolist(),
        "count": [int(n)],
    }
    zeros = n - ones
    for name, q in QUANTILES.items():
        pos = (n - 1) * q
        lo = int(np.floor(pos))
        hi = min(lo + 1, n - 1)
        out[name] = lerp((lo >= zeros).astype(np.float64), (hi >= zeros).astype(np.float64), pos - lo).tolist()
    return out


def lerp(a: np.ndarray, b: np.ndarray, t: float) -> np.ndarray:
    """numpy's quantile interpolation between order statistics a and b, bit for bit."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t


def pixel_histogram(frames: np.ndarray) -> np.ndarray:
    """(..., 3) uint8 pixels, e.g. (T, H, W, 3) frames -> (3, 256) int64 counts per channel.
    Pillow counts them (an "RGB" image over the bytes): exact, in C, ~4x numpy's bincount."""
    pixels = np.ascontiguousarray(frames)
    if pixels.dtype != np.uint8 or pixels.shape[-1:] != (3,):
        raise ValueError(f"pixel_histogram takes (..., 3) uint8 pixels, got {pixels.dtype} {pixels.shape}")
    pixels = pixels.reshape(-1, 3)
    if len(pixels) == 0:
        return np.zeros((3, 256), np.int64)
    counts = Image.frombuffer("RGB", (len(pixels), 1), pixels, "raw", "RGB", 0, 1).histogram()
    return np.asarray(counts, np.int64).reshape(3, 256)


def _hist_quantile(cum: np.ndarray, total: int, q: float) -> float:
    """Quantile with numpy's linear interpolation, from a cumulative histogram over 0..255."""
    pos = q * (total - 1)
    lo = int(np.floor(pos))
    hi = min(lo + 1, total - 1)
    v_lo = int(np.searchsorted(cum, lo, side="right"))
    v_hi = int(np.searchsorted(cum, hi, side="right"))
    return v_lo + (pos - lo) * (v_hi - v_lo)


def histogram_stats(hist: np.ndarray, frame_count: int) -> Stats:
    """Stats of camera pixels from a (3, 256) histogram, scaled to [0, 1], shaped [3][1][1]."""
    levels = np.arange(256, dtype=np.float64)
    out: Stats = {k: [] for k in ("min", "max", "mean", "std")}
    out.update({name: [] for name in QUANTILES})
    for c in range(3):
        h = hist[c]
        total = int(h.sum())
        nz = np.nonzero(h)[0]
        mean = float((h * levels).sum() / total)
        var = float((h * (levels - mean) ** 2).sum() / total)
        cum = np.cumsum(h)
        vals = {"min": nz[0], "max": nz[-1], "mean": mean, "std": np.sqrt(var)}
        vals.update({name: _hist_quantile(cum, total, q) for name, q in QUANTILES.items()})
        for key, v in vals.items():
            out[key].append([[float(v) / 255.0]])
    out["count"] = [int(frame_count)]
    return {k: out[k] for k in ("min", "max", "mean", "std", "count", *QUANTILES)}


def floor_spread(stats: dict[str, Stats], dtypes: dict[str, str],
                 floor: float) -> tuple[dict[str, Stats], dict[str, list[int]]]:
    """`stats` (stats.json's mapping) with the spread a policy normalizes each numeric non-visual
    input (observation.*) by widened to at least `floor`: std to >= floor (mean/std normalization),
    [min, max] to >= 2 floor around its middle (min-max); mean, count and quantiles as they are, and
    every other feature (actions: the targets, whose spread weighs the loss) untouched. `dtypes`:
    each feature's dtype (info.json). Returns the new mapping and, per feature, the dims it changed.

    An input the demos barely move (a block that never tilts: std 1e-5) otherwise turns a small
    departure at evaluation into hundreds of normalized units."""
    out, changed = {}, {}
    for key, entry in stats.items():
        if (not key.startswith(OBSERVATION_PREFIX) or dtypes.get(key) in (*VISUAL_DTYPES, "string")
                or not {"std", "min", "max"} <= set(entry)):
            out[key] = entry
            continue
        std = np.asarray(entry["std"], dtype=np.float64)
        lo, hi = np.asarray(entry["min"], dtype=np.float64), np.asarray(entry["max"], dtype=np.float64)
        mid, low_std, thin = (lo + hi) / 2, std < floor, (hi - lo) / 2 < floor
        if not (low_std | thin).any():
            out[key] = entry
            continue
        changed[key] = np.flatnonzero((low_std | thin).reshape(-1)).tolist()
        out[key] = {**entry, "std": np.where(low_std, floor, std).tolist(),
                    "min": np.where(thin, mid - floor, lo).tolist(), "max": np.where(thin, mid + floor, hi).tolist()}
    return out, changed
