"""One streaming pass over a dataset's data files: per-episode summaries and dataset-wide sums.

Each data file is read one row group at a time and split by episode_index; an episode is
summarized as soon as its rows are complete and then dropped, so memory holds one row
group plus one episode whatever the number of episodes. The checks judge these
summaries; none of them reads frames again (the report re-reads a few flagged episodes).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from demoforge.dataset.keys import ACTION, STATE
from demoforge.dataset.layout import NUMERIC_DTYPES, DatasetInfo
from demoforge.doctor.config import DoctorConfig
from demoforge.doctor.limits import JointLimits
from demoforge.doctor.paths import OperatorPath, operator_paths
from demoforge.raw.schema import OPERATOR, PHASE
from demoforge.stage.protocol import Progress, ProgressEvent



@dataclass
class FeatureSums:
    """Running per-dimension sums of one numeric feature, shifted for a stable variance."""

    count: int = 0  # frames
    finite: np.ndarray | None = None  # per dimension, finite values summed
    shift: np.ndarray | None = None  # first row; sums are of (x - shift)
    sum: np.ndarray | None = None
    sumsq: np.ndarray | None = None
    min: np.ndarray | None = None
    max: np.ndarray | None = None

    def add(self, x: np.ndarray) -> None:
        """Add (T, n) rows; non-finite values are D003's and are left out of every sum."""
        x = np.asarray(x, dtype=np.float64)
        ok = np.isfinite(x)
        if self.shift is None:
            self.shift = np.where(ok[0], x[0], 0.0)
            n = x.shape[1]
            self.sum, self.sumsq, self.finite = np.zeros(n), np.zeros(n), np.zeros(n, np.int64)
            self.min, self.max = np.full(n, np.inf), np.full(n, -np.inf)
        d = np.where(ok, x - self.shift, 0.0)
        self.count += x.shape[0]
        self.finite += ok.sum(axis=0)
        self.sum += d.sum(axis=0)
        self.sumsq += (d * d).sum(axis=0)
        self.min = np.minimum(self.min, np.where(ok, x, np.inf).min(axis=0))
        self.max = np.maximum(self.max, np.where(ok, x, -np.inf).max(axis=0))

    def mean(self) -> np.ndarray:
        return self.shift + self.sum / np.maximum(self.finite, 1)

    def std(self) -> np.ndarray:
        n = np.maximum(self.finite, 1)
        m = self.sum / n
        return np.sqrt(np.maximum(self.sumsq / n - m * m, 0.0))


@dataclass(frozen=True)
class EpisodeSummary:
    """What the checks need to know about one episode."""

    episode: int
    length: int  # frames
    timestamp_error: tuple[int, float, float] | None  # (frame, timestamp, frame_index / fps) of the worst error
    timestamp_backwards: int | None  # first frame whose timestamp is not after the previous one
    nonfinite: dict[str, tuple[int, int, int, float]]  # feature -> (count, first frame, first dim, value)
    idle_fraction: float | None  # fraction of steps whose largest action change is under idle_tolerance
    max_action_step: np.ndarray | None  # per action dim, largest |a[t+1] - a[t]|
    max_action_step_frame: np.ndarray | None  # frame t+1 where that largest step lands, per dim
    digest: str  # hash of the episode's state and action values
    success_values: dict[str, tuple]  # per-frame success column -> sorted unique values (at most 3)
    operator_paths: tuple[OperatorPath, ...] = ()  # runs of plan.operator with their joint travel (D014)


@dataclass(frozen=True)
class Scan:
    """Everything the streaming pass learned."""

    info: DatasetInfo
    episodes: tuple[EpisodeSummary, ...]  # in episode_index order
    sums: dict[str, FeatureSums]  # numeric feature -> sums over every frame
    occupancy: np.ndarray | None  # (n_joints, bins) frame counts; None without joint limits
    out_of_limits: np.ndarray | None  # (n_joints,) frames outside the limits
    limits: JointLimits | None
    unreadable: dict[int, str] = field(default_factory=dict)  # episode -> why it could not be summarized


def numeric_keys(info: DatasetInfo) -> list[str]:
    return [k for k, f in info.features.items() if f.dtype in NUMERIC_DTYPES]


def success_keys(info: DatasetInfo) -> list[str]:
    """Per-frame columns that claim to say whether the task succeeded."""
    return [k for k in numeric_keys(info) if "success" in k.lower()]


def occupancy_counts(values: np.ndarray, limits: JointLimits, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """(n_joints, bins) frame counts of state rows `values` across the limits, and (n_joints,) outside."""
    lim = limits.array
    q = np.asarray(values, dtype=np.float64)[:, list(limits.dims)]
    rel = (q - lim[:, 0]) / (lim[:, 1] - lim[:, 0])
    # a state stored as float32 exactly at a limit reads back up to half a float32 step beyond it
    slack = np.abs(lim) * 2.0**-24 / (lim[:, 1] - lim[:, 0])[:, None]
    inside = (rel >= -slack[:, 0]) & (rel <= 1 + slack[:, 1])
    idx = np.clip(np.nan_to_num(rel * bins, nan=0.0, posinf=0.0, neginf=0.0).astype(np.int64), 0, bins - 1)
    counts = np.zeros((len(limits.dims), bins), np.int64)
    for j in range(len(limits.dims)):
        counts[j] = np.bincount(idx[inside[:, j], j], minlength=bins)
    return counts, (~inside & np.isfinite(q)).sum(axis=0)


def _to_2d(column: pa.ChunkedArray | pa.Array, rows: int) -> np.ndarray:
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    while pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type) or pa.types.is_fixed_size_list(arr.type):
        arr = arr.flatten()
    values = arr.to_numpy(zero_copy_only=False)
    if values.dtype == object:  # nulls
        values = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    return values.reshape(rows, -1) if rows else values.reshape(0, 1)


def summarize_episode(e: int, cols: dict[str, np.ndarray], fps: int, cfg: DoctorConfig,
                      success: list[str], arm_dims: tuple[int, ...] | None = None) -> EpisodeSummary:
    """Summary of one episode from its (T, n) numeric columns; `arm_dims`: the arm joints'
    dimensions of observation.state (known with joint limits)."""
    t = len(cols["timestamp"]) if "timestamp" in cols else len(next(iter(cols.values())))
    ts_err = backwards = None
    if "timestamp" in cols:
        ts = cols["timestamp"][:, 0].astype(np.float64)
        want = np.arange(t) / fps
        err = np.abs(ts - want)
        if err.size and err.max() > 1e-4:
            k = int(np.argmax(err))
            ts_err = (k, float(ts[k]), float(want[k]))
        bad = np.flatnonzero(np.diff(ts) <= 0)
        backwards = int(bad[0]) + 1 if bad.size else None
    nonfinite = {}
    for key, x in cols.items():
        if x.dtype.kind == "f":
            mask = ~np.isfinite(x)
            if mask.any():
                frame, dim = (int(v[0]) for v in np.nonzero(mask))
                nonfinite[key] = (int(mask.sum()), frame, dim, float(x[frame, dim]))
    idle = step = step_frame = None
    if ACTION in cols and t > 1:
        d = np.abs(np.diff(cols[ACTION].astype(np.float64), axis=0))
        idle = float(np.mean(np.nanmax(d, axis=1) < cfg.idle_tolerance))
        d = np.nan_to_num(d, nan=0.0)
        step_frame = np.argmax(d, axis=0) + 1
        step = d.max(axis=0)
    elif ACTION in cols:
        idle = 1.0
    h = hashlib.blake2b(digest_size=16)
    h.update(str(t).encode())
    for key in (STATE, ACTION):
        if key in cols:
            h.update(np.ascontiguousarray(cols[key]).tobytes())
    values = {k: tuple(sorted(np.unique(cols[k]).tolist())[:3]) for k in success if k in cols}
    paths = ()
    if arm_dims is not None and STATE in cols and OPERATOR in cols:
        paths = operator_paths(cols[STATE][:, list(arm_dims)], cols[OPERATOR], cols.get(PHASE))
    return EpisodeSummary(e, t, ts_err, backwards, nonfinite, idle, step, step_frame, h.hexdigest(), values, paths)


def _episodes_in_group(pf: pq.ParquetFile, group: int, eps: list[int]) -> list[int]:
    """The episodes of `eps` whose rows row group `group` may hold, by its episode_index statistics
    (all of `eps` without them)."""
    column = pf.metadata.row_group(group).column(pf.schema_arrow.get_field_index("episode_index"))
    stats = column.statistics
    if stats is None or not stats.has_min_max:
        return list(eps)
    return [e for e in eps if stats.min <= e <= stats.max]


def scan_dataset(root: Path, info: DatasetInfo, episodes: pa.Table, cfg: DoctorConfig,
                 limits: JointLimits | None, *, progress: Progress | None = None) -> Scan:
    """Stream every data file once; see the module docstring. `progress` takes a "doctor" episode event
    as episodes are summarized (or found unreadable), and one more at the end with done == total."""
    # One function: one streaming pass over every data file; its accumulators (feature sums, occupancy,
    # out-of-limit counts, summaries) are shared by the nested finish() and the loop over files.
    keys = numeric_keys(info)
    success = success_keys(info)
    ids = episodes.column("episode_index").to_pylist()
    lengths = dict(zip(ids, episodes.column("length").to_pylist()))
    files: dict[tuple[int, int], list[int]] = defaultdict(list)
    for e, c, f in zip(ids, episodes.column("data/chunk_index").to_pylist(),
                       episodes.column("data/file_index").to_pylist()):
        files[(c, f)].append(e)
    sums = {k: FeatureSums() for k in keys}
    occ = out = None
    if limits is not None:
        occ, out = np.zeros((len(limits.dims), cfg.bins), np.int64), np.zeros(len(limits.dims), np.int64)
    summaries: dict[int, EpisodeSummary] = {}
    unreadable: dict[int, str] = {}
    total = len(ids)

    def report(item: str) -> None:
        if progress is not None:
            progress(ProgressEvent("doctor", "episode", item, min(len(summaries) + len(unreadable), total), total))

    def finish(e: int, pieces: list[dict[str, np.ndarray]]) -> None:
        nonlocal occ, out
        cols = {k: np.concatenate([p[k] for p in pieces]) for k in pieces[0]}
        for k in keys:
            if k in cols:
                sums[k].add(cols[k])
        if limits is not None and STATE in cols:
            c, o = occupancy_counts(cols[STATE], limits, cfg.bins)
            occ += c
            out += o
        summaries[e] = summarize_episode(e, cols, info.fps, cfg, success, None if limits is None else limits.dims)
        report(f"episode {e}")

    for (chunk, file), eps in sorted(files.items()):
        rel = info.data_path.format(chunk_index=chunk, file_index=file)  # named in full: every chunk has a file-000
        try:
            pf = pq.ParquetFile(root / rel)
        except (OSError, pa.ArrowException) as exc:
            for e in eps:
                unreadable[e] = f"{rel}: {exc}"
            continue
        present = [k for k in keys if k in pf.schema_arrow.names]
        if "episode_index" not in present:
            for e in eps:
                unreadable[e] = f"{rel}: no episode_index column"
            continue
        pending: dict[int, list[dict[str, np.ndarray]]] = defaultdict(list)
        got: dict[int, int] = defaultdict(int)
        for g in range(pf.metadata.num_row_groups):
            try:
                table = pf.read_row_group(g, columns=present)
            except (OSError, pa.ArrowException) as exc:  # a damaged page: pyarrow's error names no file
                for e in _episodes_in_group(pf, g, eps):
                    if e not in summaries:
                        unreadable[e] = f"{rel}: row group {g} does not decode ({str(exc).strip()})"
                        pending.pop(e, None)
                continue
            n = table.num_rows
            block = {k: _to_2d(table.column(k), n) for k in present}
            ep = block["episode_index"][:, 0]
            cuts = np.flatnonzero(np.diff(ep)) + 1
            for a, b in zip(np.r_[0, cuts], np.r_[cuts, n]):
                e = int(ep[a])
                if e in unreadable:  # the rest of an episode a damaged row group held
                    continue
                pending[e].append({k: v[a:b] for k, v in block.items()})
                got[e] += b - a
                if got[e] == lengths.get(e, -1):
                    finish(e, pending.pop(e))
            del table, block
        for e in pending:
            unreadable[e] = f"{rel}: {got[e]} rows but meta/episodes gives length {lengths.get(e)}"
        for e in eps:
            if e not in summaries and e not in unreadable:
                unreadable[e] = f"{rel}: no rows"
        report(rel)
    if progress is not None:
        progress(ProgressEvent("doctor", "episode", str(root), total, total))
    return Scan(info, tuple(summaries[e] for e in sorted(summaries)), sums, occ, out, limits, unreadable)
