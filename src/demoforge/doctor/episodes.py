"""Checks across episodes: D007 joint-limit coverage, D009 length outliers, D010 duplicate episodes."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from demoforge.dataset.keys import STATE
from demoforge.doctor.context import Context, capped
from demoforge.doctor.findings import Evidence, Finding

MIN_EPISODES_FOR_OUTLIERS = 5


def joint_occupancy(counts: np.ndarray, min_frames: int) -> np.ndarray:
    """(n_joints,) fraction of bins holding at least `min_frames` frames."""
    return (counts >= min_frames).mean(axis=1)


def check_joint_coverage(ctx: Context) -> list[Finding]:
    """D007: per joint, the fraction of bins across its limits the data visit; unvisited bins listed."""
    if ctx.scan is None or ctx.info is None or STATE not in ctx.info.features:
        return []
    cfg, scan = ctx.config, ctx.scan
    if scan.limits is None:
        return [Finding("D007", "info", f"joint-limit coverage not checked: {ctx.limits_note}",
                        Evidence(feature=STATE), "pass --robot CARD|MJCF|URDF (e.g. --robot panda)")]
    out = []
    lim = scan.limits.array
    occ = joint_occupancy(scan.occupancy, cfg.min_bin_frames)
    edges = [np.linspace(lo, hi, cfg.bins + 1) for lo, hi in lim]
    for j, name in enumerate(scan.limits.names):
        if occ[j] < cfg.min_occupancy:
            empty = np.flatnonzero(scan.occupancy[j] < cfg.min_bin_frames)
            ranges = [[round(float(edges[j][b]), 4), round(float(edges[j][b + 1]), 4)] for b in empty]
            out.append(Finding("D007", "warning", f"joint {name!r} visits {occ[j]:.0%} of its {cfg.bins} bins across "
                               f"[{lim[j, 0]:.3f}, {lim[j, 1]:.3f}]; never visited: bins {empty.tolist()}",
                               Evidence(feature=STATE, values={"joint": name, "dim": scan.limits.dims[j],
                                                               "occupancy": float(occ[j]),
                                                               "empty_bins": empty.tolist(), "empty_ranges": ranges,
                                                               "counts": scan.occupancy[j].tolist()}),
                               "generate episodes that visit the empty bins: `demoforge coverage DATASET OUT "
                               f"--robot {scan.limits.source.split(' ')[0]}`"))
        if scan.out_of_limits[j]:
            out.append(Finding("D007", "warning", f"joint {name!r}: {int(scan.out_of_limits[j])} frames outside its "
                               f"limits [{lim[j, 0]:.3f}, {lim[j, 1]:.3f}]",
                               Evidence(feature=STATE, values={"joint": name, "frames": int(scan.out_of_limits[j])}),
                               "check --robot names the robot that recorded the data, and the state's units [rad]"))
    return out


def _task_groups(ctx: Context) -> dict[str, list]:
    """Episode summaries grouped by their first task: lengths are only comparable within a task."""
    tasks = {}
    if ctx.episodes is not None and "tasks" in ctx.episodes.column_names:
        for e, names in zip(ctx.episodes.column("episode_index").to_pylist(), ctx.episodes.column("tasks").to_pylist()):
            tasks[e] = names[0] if names else ""
    groups: dict[str, list] = defaultdict(list)
    for s in ctx.scan.episodes:
        groups[tasks.get(s.episode, "")].append(s)
    return groups


def check_lengths(ctx: Context) -> list[Finding]:
    """D009: episodes whose length is far from the median of their task's episodes (robust z-score on
    the median absolute deviation); tasks with fewer than 5 episodes are pooled and judged together."""
    if ctx.scan is None or len(ctx.scan.episodes) < MIN_EPISODES_FOR_OUTLIERS:
        return []
    cfg = ctx.config
    groups = _task_groups(ctx)
    small = [s for g in groups.values() if len(g) < MIN_EPISODES_FOR_OUTLIERS for s in g]
    judged = [(t, g) for t, g in groups.items() if len(g) >= MIN_EPISODES_FOR_OUTLIERS]
    if len(small) >= MIN_EPISODES_FOR_OUTLIERS:
        judged.append(("tasks with few episodes" if judged else "all tasks", small))
    out = []
    for task, group in judged:
        lengths = np.array([s.length for s in group], dtype=np.float64)
        med = float(np.median(lengths))
        # A floor on the scale: equal-length episodes would otherwise flag an off-by-one.
        scale = max(1.4826 * float(np.median(np.abs(lengths - med))), 0.1 * med, 1.0)
        for s in group:
            z = (s.length - med) / scale
            if abs(z) > cfg.length_mad_z:
                kind = "short" if z < 0 else "long"
                out.append(Finding("D009", "warning", f"episode {s.episode} is {kind}: {s.length} frames against a "
                                   f"median of {med:.0f} for {task!r} (robust z {z:+.1f})",
                                   Evidence(s.episode, None, None, {"length": s.length, "median": med, "z": z,
                                                                    "task": task}),
                                   "look at the episode (`demoforge plot DATASET --episode E`): a long episode "
                                   "may be valid but slow (an expert taking joint-space detours, retries or "
                                   "re-plans; D014 measures path efficiency per operator), a stuck robot, or "
                                   "a recording cut short; keep it if it is a valid demonstration you want, "
                                   "else drop it"))
    out.sort(key=lambda f: f.evidence.episode)
    return capped(out, cfg, "D009", "length outliers")


def check_duplicates(ctx: Context) -> list[Finding]:
    """D010: episodes whose state and action values are identical to another episode's."""
    if ctx.scan is None:
        return []
    groups: dict[str, list[int]] = defaultdict(list)
    for s in ctx.scan.episodes:
        groups[s.digest].append(s.episode)
    out = []
    for eps in sorted(g for g in groups.values() if len(g) > 1):
        out.append(Finding("D010", "warning", f"episodes {eps} have identical state and action values",
                           Evidence(eps[0], None, None, {"episodes": eps}),
                           "keep one copy (duplicates overweight one demonstration and leak between train "
                           "and validation splits); check merges for a source added twice"))
    return capped(out, ctx.config, "D010", "duplicate groups")
