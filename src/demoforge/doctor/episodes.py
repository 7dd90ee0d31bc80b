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


def visited_span(scan) -> np.ndarray | None:
    """(n_joints, 2) lowest and highest value each joint takes anywhere in the data, within its limits
    (NaN where a joint has no finite value): the range the dataset's own tasks need."""
    sums = scan.sums.get(STATE)
    if scan.limits is None or sums is None or sums.min is None:
        return None
    dims = list(scan.limits.dims)
    lim = scan.limits.array
    lo, hi = np.asarray(sums.min, np.float64)[dims], np.asarray(sums.max, np.float64)[dims]
    span = np.stack([np.clip(lo, lim[:, 0], lim[:, 1]), np.clip(hi, lim[:, 0], lim[:, 1])], axis=1)
    span[~(np.isfinite(lo) & np.isfinite(hi))] = np.nan
    return span


def span_bins(span: np.ndarray, lim: np.ndarray, bins: int) -> tuple[int, int] | None:
    """First and last bin (of `bins` across `lim`) that the span [lo, hi] touches; None for an empty span."""
    if not np.isfinite(span).all():
        return None
    rel = (span - lim[0]) / (lim[1] - lim[0]) * bins
    first, last = (int(np.clip(np.floor(r), 0, bins - 1)) for r in rel)
    return first, last


def joint_coverage_findings(limits, counts: np.ndarray, out_of_limits: np.ndarray | None, span: np.ndarray | None,
                            cfg, robot_hint: str) -> list[Finding]:
    """D007 judged against the task-relevant range: per joint, bins never visited *inside* the span its
    episodes cover are a warning (a stretch of the task's own range with no data); bins outside it that
    the joint never visits are a note, since the dataset's tasks do not go there."""
    out = []
    lim = limits.array
    occ = joint_occupancy(counts, cfg.min_bin_frames)
    for j in range(len(limits.names)):
        name = limits.label(j)
        edges = np.linspace(lim[j, 0], lim[j, 1], cfg.bins + 1)
        empty = counts[j] < cfg.min_bin_frames

        def ranges(bs):
            return [[round(float(edges[b]), 4), round(float(edges[b + 1]), 4)] for b in bs]

        touched = span_bins(span[j], lim[j], cfg.bins) if span is not None else None
        inside = np.zeros(cfg.bins, bool)
        if touched is not None:
            inside[touched[0]:touched[1] + 1] = True
        holes = np.flatnonzero(inside & empty)
        outside = np.flatnonzero(~inside & empty)
        task_occ = 1.0 - holes.size / max(int(inside.sum()), 1)
        values = {"joint": name, "robot_joint": limits.names[j], "dim": limits.dims[j], "occupancy": float(occ[j]),
                  "task_range": None if touched is None else [round(float(v), 4) for v in span[j]],
                  "task_bins": None if touched is None else list(touched), "task_occupancy": float(task_occ),
                  "holes": holes.tolist(), "hole_ranges": ranges(holes),
                  "empty_bins": np.flatnonzero(empty).tolist(), "empty_ranges": ranges(np.flatnonzero(empty)),
                  "counts": counts[j].tolist()}
        where = f"[{lim[j, 0]:.3f}, {lim[j, 1]:.3f}]"
        if touched is not None and task_occ < cfg.min_occupancy:
            out.append(Finding(
                "D007", "warning", f"joint {name!r} visits {task_occ:.0%} of the {int(inside.sum())} bins its "
                f"episodes span, [{span[j, 0]:.3f}, {span[j, 1]:.3f}] of its limits {where}; never visited inside "
                f"that span: bins {holes.tolist()} ({cfg.bins} bins across the limits)",
                Evidence(feature=STATE, values=values),
                "record or generate episodes through the unvisited stretch (the episodes reach both sides of it, "
                "so the task needs it); `demoforge coverage DATASET OUT"
                f"{robot_hint}` writes such episodes as a separate dataset to train on beside this one"))
        elif occ[j] < cfg.min_occupancy:
            span_text = ("no finite value" if touched is None
                         else f"[{span[j, 0]:.3f}, {span[j, 1]:.3f}], every bin of which is visited")
            out.append(Finding(
                "D007", "info", f"joint {name!r} visits {occ[j]:.0%} of its {cfg.bins} bins across its limits "
                f"{where}; its episodes span {span_text}; bins outside that span ({outside.tolist()}) are "
                "never visited, which the dataset's tasks do not need",
                Evidence(feature=STATE, values=values),
                "nothing to do for these tasks; if a policy must also work outside this range, generate episodes "
                f"there as a separate dataset (`demoforge coverage DATASET OUT{robot_hint}`) and train on both"))
        if out_of_limits is not None and out_of_limits[j]:
            out.append(Finding("D007", "warning", f"joint {name!r}: {int(out_of_limits[j])} frames outside its "
                               f"limits {where}",
                               Evidence(feature=STATE, values={"joint": name, "robot_joint": limits.names[j],
                                                               "frames": int(out_of_limits[j])}),
                               "check --robot names the robot that recorded the data, and the state's units [rad]"))
    return out


def check_joint_coverage(ctx: Context) -> list[Finding]:
    """D007: per joint, the bins across its limits the data visit, judged against the range its episodes span
    (see joint_coverage_findings); and how the joints were paired with state dimensions when not by name."""
    if ctx.scan is None or ctx.info is None or STATE not in ctx.info.features:
        return []
    scan = ctx.scan
    if scan.limits is None:
        return [Finding("D007", "info", f"joint-limit coverage not checked: {ctx.limits_note}",
                        Evidence(feature=STATE), "pass --robot CARD|MJCF|URDF (e.g. --robot panda)")]
    limits = scan.limits
    robot = limits.source.split(" ")[0]
    out = []
    if limits.mapping != "name":
        out.append(Finding("D007", "warning" if limits.mapping == "contradicted" else "info", limits.mapping_note,
                           Evidence(feature=STATE, values={"robot_joints": list(limits.names),
                                                           "state_names": list(limits.state_names),
                                                           "dims": list(limits.dims)}),
                           "check that --robot names the robot that recorded the data and that the state holds its "
                           "joints in this order; name the state's dimensions after the robot's joints (or pass a "
                           "card YAML whose arm_joints are the dataset's names) so they are matched by name"))
    return out + joint_coverage_findings(limits, scan.occupancy, scan.out_of_limits, visited_span(scan),
                                         ctx.config, f" --robot {robot}")


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
