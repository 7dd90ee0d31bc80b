"""Exact dataset-wide statistics of numeric columns in bounded memory.

Moments stream over chunks (Chan's pairwise update). Quantiles are exact order
statistics, found by radix selection on order-preserving 64-bit keys of the float64
values. The first pass counts the top 16 bits of every key (one histogram per
dimension); every later pass looks only at the keys that share the known bits of a
wanted order statistic (a "bucket"): buckets small enough are gathered and sorted, the
others are counted on their next 16 bits. Spread-out data needs two passes, data piled on
few values at most four; memory depends on the number of dimensions and the gather
budget, never on the number of frames. Constant dimensions need no pass, and columns of
up to IN_MEMORY_VALUES values are selected in memory (np.partition).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from demoforge.dataset.layout import QUANTILES
from demoforge.dataset.stats import lerp

IN_MEMORY_VALUES = 16_000_000  # a column of up to this many values (128 MB as float64) is selected in memory
GATHER_VALUES = 4_000_000  # keys gathered per pass, at most
ROW_BLOCK_VALUES = 1 << 20  # keys converted at once during a pass
MOMENT_BLOCK_VALUES = 1 << 19  # values per block of the moments pass (4 MB of scratch)
HISTOGRAM_GROUPS = 64  # 16-bit histograms (512 KB each) counted per pass, at most
_DIGIT_BITS = 16
_DIGITS = 1 << _DIGIT_BITS
_LEVELS = 64 // _DIGIT_BITS
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


def _key_blocks(chunks: Callable[[], Iterable[np.ndarray]], dims: int, columns: np.ndarray) -> Iterable[np.ndarray]:
    """The keys of `columns` of all rows, in blocks of at most ROW_BLOCK_VALUES values (bounds scratch memory)."""
    rows = max(1, ROW_BLOCK_VALUES // len(columns))
    for chunk in chunks():
        x = np.asarray(chunk).reshape(len(chunk), dims)
        for i in range(0, len(x), rows):
            yield _keys(x[i:i + rows, columns])


def _select(chunks: Callable[[], Iterable[np.ndarray]], dims: int, ranks: list[int], n: int,
            constant: np.ndarray | None = None) -> np.ndarray:
    """Order statistics `ranks` (0-based) of every dimension of `n` rows: (len(ranks), dims) float64.

    `constant[d]` (optional) marks dimensions whose min equals their max: no pass needed.
    """
    n_ranks = len(ranks)
    found = np.zeros((n_ranks, dims), np.uint64)  # the keys, once known
    known = np.zeros((n_ranks, dims), np.int64)  # leading key bits known: 0, 16, 32, 48 or 64
    remaining = np.repeat(np.asarray(ranks, np.int64)[:, None], dims, axis=1)  # rank inside the bucket
    size = np.full((n_ranks, dims), n, np.int64)  # keys in the rank's bucket
    todo = np.ones((n_ranks, dims), bool)
    if constant is not None and constant.any():
        for chunk in chunks():  # the first value of each constant dimension is its value
            first = _keys(np.asarray(chunk, np.float64).reshape(len(chunk), dims)[:1])
            if len(first):
                found[:, constant] = first[0, constant]
                todo[:, constant] = False
                break
    while todo.any():
        level = int(known[todo].min())
        ranks_at, dims_at = np.nonzero(todo & (known == level))
        # one bucket per (dimension, known bits); the smallest ones are gathered, some others counted
        high_bits = found[ranks_at, dims_at] >> np.uint64(64 - level) if level else np.uint64(0)
        buckets, of_rank = np.unique((dims_at.astype(np.uint64) << np.uint64(48)) | high_bits, return_inverse=True)
        sizes = np.zeros(len(buckets), np.int64)
        sizes[of_rank] = size[ranks_at, dims_at]
        order = np.argsort(sizes, kind="stable")
        gather = np.zeros(len(buckets), bool)
        gather[order[np.cumsum(sizes[order]) <= GATHER_VALUES]] = True
        count = np.flatnonzero(~gather)[:HISTOGRAM_GROUPS]
        slot = np.full(len(buckets), -1, np.int64)  # histogram index of a counted bucket
        slot[count] = np.arange(len(count))
        counts, keys, start = _read_pass(chunks, dims, level, buckets, gather, slot)
        mine = np.flatnonzero(gather[of_rank])
        for i in np.unique(of_rank[mine]):  # a gathered rank: partition its bucket's keys
            these = mine[of_rank[mine] == i]
            r, d = ranks_at[these], dims_at[these]
            part = np.partition(keys[start[i]:start[i + 1]], np.unique(remaining[r, d]))
            found[r, d] = part[remaining[r, d]]
            todo[r, d] = False
        if len(count):  # a counted rank: its next digit is where it falls in the bucket's histogram
            cum = np.cumsum(counts, axis=1)
            mine = slot[of_rank] >= 0
            r, d, s = ranks_at[mine], dims_at[mine], slot[of_rank[mine]]
            digit = np.array([np.searchsorted(cum[i], rem, side="right") for i, rem in zip(s, remaining[r, d])],
                             dtype=np.int64)
            below = np.where(digit > 0, cum[s, np.maximum(digit - 1, 0)], 0)
            remaining[r, d] -= below
            size[r, d] = cum[s, digit] - below
            found[r, d] |= digit.astype(np.uint64) << np.uint64(64 - level - _DIGIT_BITS)
            known[r, d] = level + _DIGIT_BITS
            todo[r, d] &= known[r, d] < 64
    return _unkey(found)


def _read_pass(chunks: Callable[[], Iterable[np.ndarray]], dims: int, level: int, buckets: np.ndarray,
               gather: np.ndarray, slot: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One pass over the data for the buckets of keys whose first `level` bits are known.

    Returns the next-digit histograms of the counted buckets (slot >= 0), (counted, 65536);
    the keys of the gathered buckets grouped by bucket; and where each bucket's keys start."""
    shift, digit_shift = np.uint64(64 - level), np.uint64(64 - level - _DIGIT_BITS)
    counts = np.zeros(int((slot >= 0).sum()) * _DIGITS, np.int64)
    got_keys, got_bucket = [], []
    bucket_dim = buckets >> np.uint64(48)
    active = np.unique(bucket_dim[gather | (slot >= 0)]).astype(np.int64)  # the dimensions this pass reads
    tags = active.astype(np.uint64) << np.uint64(48)
    column_bucket = np.searchsorted(bucket_dim, active)  # at level 0: a dimension's only bucket
    for keys in _key_blocks(chunks, dims, active):
        if level:  # the bucket of every key (or none)
            flat = (tags | (keys >> shift)).ravel()
            pos = np.minimum(np.searchsorted(buckets, flat), len(buckets) - 1)
            hit = buckets[pos] == flat
            b, k = pos[hit], keys.ravel()[hit]
            counted = slot[b] >= 0
            if counted.any():
                digits = ((k[counted] >> digit_shift) & np.uint64(_DIGITS - 1)).astype(np.int64)
                counts += np.bincount(slot[b[counted]] * _DIGITS + digits, minlength=len(counts))
            kept = gather[b]
            got_keys.append(k[kept])
            got_bucket.append(b[kept])
        else:  # whole columns are counted or gathered
            column_slot = slot[column_bucket]
            counted = column_slot >= 0
            if counted.any():
                digits = (keys[:, counted] >> digit_shift).astype(np.int64) + column_slot[counted] * _DIGITS
                counts += np.bincount(digits.ravel(), minlength=len(counts))
            got_keys.append(keys[:, ~counted].T.ravel())
            got_bucket.append(np.repeat(column_bucket[~counted], len(keys)))
    keys = np.concatenate(got_keys or [np.zeros(0, np.uint64)])
    bucket_of = np.concatenate(got_bucket or [np.zeros(0, np.int64)])
    order = np.argsort(bucket_of.astype(np.uint16 if len(buckets) <= 1 << 16 else np.int64), kind="stable")
    start = np.searchsorted(bucket_of[order], np.arange(len(buckets) + 1))
    return counts.reshape(-1, _DIGITS), keys[order], start


def streaming_stats(chunks: Callable[[], Iterable[np.ndarray]], dims: int) -> dict:
    """Stats over all rows of the chunks, each (n_i, dims) or (n_i,); `chunks()` restarts."""
    n, mean, m2 = 0, np.zeros(dims), np.zeros(dims)
    lo, hi = np.full(dims, np.inf), np.full(dims, -np.inf)
    small = []
    rows = max(1, MOMENT_BLOCK_VALUES // dims)
    for chunk in chunks():
        x = np.asarray(chunk, dtype=np.float64).reshape(len(chunk), dims)
        if not len(x):
            continue
        for i in range(0, len(x), rows):
            # a small C-order copy per block: reductions along contiguous rows are several times
            # faster than along axis 0, and small scratch is reused instead of page-faulted anew
            block = x[i:i + rows].T.copy()
            lo, hi = np.minimum(lo, block.min(axis=1)), np.maximum(hi, block.max(axis=1))
            cn, cmean = block.shape[1], block.mean(axis=1)
            block -= cmean[:, None]
            cm2 = np.square(block, out=block).sum(axis=1)
            delta = cmean - mean
            total = n + cn
            mean = mean + delta * (cn / total)
            m2 = m2 + cm2 + delta**2 * (n * cn / total)
            n = total
        if small is not None:
            small.append(x)
            if n * dims > IN_MEMORY_VALUES:
                small = None
    out = {"min": lo.tolist(), "max": hi.tolist(), "mean": mean.tolist(), "std": np.sqrt(m2 / n).tolist(),
           "count": [n]}
    plan = _ranks(n)
    if small is not None:
        needed = sorted({r for lo_, hi_, _ in plan for r in (lo_, hi_)})
        varying = lo != hi  # a constant dimension's every order statistic is its value
        values = np.concatenate([x[:, varying] for x in small])
        values.partition(needed, axis=0)  # each needed rank in its sorted place
        order = {k: np.where(varying, 0.0, lo) for k in needed}
        for k in needed:
            order[k][varying] = values[k]
    else:
        needed = sorted({r for lo_, hi_, _ in plan for r in (lo_, hi_)})
        found = _select(chunks, dims, needed, n, constant=lo == hi)
        order = dict(zip(needed, found))
    for name, (a, b, w) in zip(QUANTILES, plan):
        out[name] = lerp(order[a], order[b], w).tolist()
    return out
