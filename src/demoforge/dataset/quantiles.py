"""Exact dataset-wide statistics of numeric columns in bounded memory.

Moments stream over chunks (Chan's pairwise update). Quantiles are exact order
statistics found by radix selection on order-preserving 64-bit keys of the float64
values: four passes over the data, each counting one 16-bit digit, so memory depends
on the number of dimensions, never on the number of frames. Small columns take the
same exact values straight from numpy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from demoforge.dataset.layout import QUANTILES

IN_MEMORY_VALUES = 1_000_000  # below this many values (8 MB) a column is simply loaded
_DIGIT_BITS = 16
_SIGN = np.uint64(1 << 63)


def _keys(x: np.ndarray) -> np.ndarray:
    """float64 -> uint64 keys that sort like the floats."""
    u = np.ascontiguousarray(x, dtype=np.float64).view(np.uint64)
    neg = (u & _SIGN) != 0
    return np.where(neg, ~u, u | _SIGN)


def _unkey(k: np.ndarray) -> np.ndarray:
    k = np.asarray(k, dtype=np.uint64)
    pos = (k & _SIGN) != 0
    return np.where(pos, k & ~_SIGN, ~k).view(np.float64)


def _ranks(n: int) -> list[tuple[int, int, float]]:
    """Per quantile (numpy's linear rule): the two order statistics and the weight."""
    out = []
    for q in QUANTILES.values():
        pos = q * (n - 1)
        lo = int(np.floor(pos))
        out.append((lo, min(lo + 1, n - 1), pos - lo))
    return out


def _select(chunks: Callable[[], Iterable[np.ndarray]], dims: int, ranks: list[int]) -> np.ndarray:
    """Order statistics `ranks` (0-based) of every dimension: (len(ranks), dims) float64."""
    prefix = np.zeros((len(ranks), dims), np.uint64)
    remaining = np.array(ranks, dtype=np.int64)[:, None].repeat(dims, axis=1)
    for p in range(64 // _DIGIT_BITS):
        shift = np.uint64(64 - _DIGIT_BITS * (p + 1))
        counts = np.zeros((len(ranks), dims, 1 << _DIGIT_BITS), np.int64)
        for chunk in chunks():
            keys = _keys(chunk.reshape(len(chunk), dims))
            digits = ((keys >> shift) & np.uint64(0xFFFF)).astype(np.int64)
            high = keys >> (shift + np.uint64(_DIGIT_BITS)) if p else None
            for d in range(dims):
                if high is None:  # first digit: the same counts serve every rank
                    counts[:, d] += np.bincount(digits[:, d], minlength=1 << _DIGIT_BITS)
                    continue
                for r in range(len(ranks)):
                    sel = digits[high[:, d] == prefix[r, d], d]
                    counts[r, d] += np.bincount(sel, minlength=1 << _DIGIT_BITS)
        cum = np.cumsum(counts, axis=2)
        for r in range(len(ranks)):
            for d in range(dims):
                digit = int(np.searchsorted(cum[r, d], remaining[r, d], side="right"))
                remaining[r, d] -= cum[r, d, digit - 1] if digit else 0
                prefix[r, d] = (prefix[r, d] << np.uint64(_DIGIT_BITS)) | np.uint64(digit)
    return _unkey(prefix)


def streaming_stats(chunks: Callable[[], Iterable[np.ndarray]], dims: int) -> dict:
    """Stats over all rows of the chunks, each (n_i, dims) or (n_i,); `chunks()` restarts."""
    n, mean, m2 = 0, np.zeros(dims), np.zeros(dims)
    lo, hi = np.full(dims, np.inf), np.full(dims, -np.inf)
    small = []
    for chunk in chunks():
        x = np.asarray(chunk, dtype=np.float64).reshape(len(chunk), dims)
        if not len(x):
            continue
        cn, cmean = len(x), x.mean(axis=0)
        cm2 = ((x - cmean) ** 2).sum(axis=0)
        delta = cmean - mean
        total = n + cn
        mean = mean + delta * (cn / total)
        m2 = m2 + cm2 + delta**2 * (n * cn / total)
        n = total
        lo, hi = np.minimum(lo, x.min(axis=0)), np.maximum(hi, x.max(axis=0))
        if small is not None:
            small.append(x)
            if n * dims > IN_MEMORY_VALUES:
                small = None
    out = {"min": lo.tolist(), "max": hi.tolist(), "mean": mean.tolist(), "std": np.sqrt(m2 / n).tolist(),
           "count": [n]}
    plan = _ranks(n)
    if small is not None:
        values = np.sort(np.concatenate(small), axis=0)
        order = {k: values[k] for k in {r for lo_, hi_, _ in plan for r in (lo_, hi_)}}
    else:
        needed = sorted({r for lo_, hi_, _ in plan for r in (lo_, hi_)})
        found = _select(chunks, dims, needed)
        order = dict(zip(needed, found))
    for name, (a, b, w) in zip(QUANTILES, plan):
        out[name] = (order[a] + w * (order[b] - order[a])).tolist()
    return out
