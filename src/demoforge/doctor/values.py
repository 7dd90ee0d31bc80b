"""Checks of recorded values: D003 NaN/Inf, D004 near-constant dims, D005 frozen actions,
D008 action jumps, D011 stats.json against recomputed statistics, D012 constant success flags."""

from __future__ import annotations

import numpy as np

from demoforge.dataset.keys import ACTION, OBSERVATION_PREFIX
from demoforge.dataset.stats import floor_spread
from demoforge.doctor.context import Context, capped
from demoforge.doctor.findings import Evidence, Finding, jsonable

_STAT_KEYS = ("min", "max", "mean", "std")


def _dim_names(ctx: Context, key: str) -> list[str]:
    ft = ctx.info.features[key]
    n = int(np.prod(ft.shape))
    names = ft.names
    if isinstance(names, dict):
        names = next(iter(names.values()), None)
    if isinstance(names, list) and len(names) == n:
        return [str(x) for x in names]
    return [str(i) for i in range(n)]


def check_nonfinite(ctx: Context) -> list[Finding]:
    """D003: NaN or Inf anywhere in a float feature."""
    if ctx.scan is None:
        return []
    out = []
    for s in ctx.scan.episodes:
        for key, (count, frame, dim, value) in sorted(s.nonfinite.items()):
            out.append(Finding("D003", "error", f"episode {s.episode}: {count} non-finite values in {key!r}, first "
                               f"{value} at frame {frame}, dim {_dim_names(ctx, key)[dim]}",
                               Evidence(s.episode, frame, key, {"count": count, "dim": dim, "value": jsonable(value)}),
                               "drop the episode (or re-record it); training normalizes with these values and "
                               "every loss after the first batch holding one is NaN"))
    return capped(out, ctx.config, "D003", "episodes with non-finite values")


def policy_features(ctx: Context) -> list[str]:
    """Float features a policy normalizes: observation.* and action (not the raw sim state, commands, labels)."""
    return [k for k in ctx.scan.sums if ctx.info.features[k].dtype in ("float32", "float64")
            and (k == ACTION or k.startswith(OBSERVATION_PREFIX))]


def check_constant(ctx: Context) -> list[Finding]:
    """D004: dimensions of policy features (observation.*, action) whose spread over the dataset is ~0.

    One finding per feature and severity, listing every such dimension.
    """
    if ctx.scan is None:
        return []
    cfg, out = ctx.config, []
    # the floor bake.json records, where stats.json is floored (D011 checks that it is)
    record = ctx.bake.stats_floor if ctx.bake is not None and ctx.stats_exact else {}
    for key in policy_features(ctx):
        sums = ctx.scan.sums[key]
        if sums.count < 2:
            continue
        spread, std, mean, names = sums.max - sums.min, sums.std(), sums.mean(), _dim_names(ctx, key)
        finite = np.isfinite(spread)
        constant = np.flatnonzero(finite & (spread < cfg.constant_range))
        near = np.flatnonzero(finite & (spread >= cfg.constant_range) & (std < cfg.near_constant_std))
        for sev, dims, what in (("error", constant, "constant"), ("warning", near, "nearly constant")):
            if not dims.size:
                continue
            shown = ", ".join(f"{names[d]} (mean {mean[d]:.4g}, std {std[d]:.2g})" for d in dims[:8])
            more = f" and {dims.size - 8} more" if dims.size > 8 else ""
            floored = set(record.get("floored", {}).get(key, ()))
            if sev == "warning" and record.get("std_floor") and set(dims.tolist()) <= floored:
                out.append(Finding("D004", "info", f"{key}: {dims.size} {what} dims over {sums.count} frames: "
                                   f"{shown}{more}; stats.json floors their spread at {record['std_floor']:g} "
                                   "(bake --std-floor)",
                                   Evidence(feature=key, values={"dims": dims.tolist(), "std": std[dims].tolist(),
                                                                 "names": [names[d] for d in dims]}),
                                   "none needed for normalization; the policy still sees no variation in them"))
                continue
            out.append(Finding("D004", sev, f"{key}: {dims.size} {what} dims over {sums.count} frames: {shown}{more}; "
                               "mean/std normalization divides by ~0",
                               Evidence(feature=key, values={"dims": dims.tolist(), "names": [names[d] for d in dims],
                                                             "std": std[dims].tolist(), "min": sums.min[dims].tolist(),
                                                             "max": sums.max[dims].tolist()}),
                               "drop these dimensions from the policy's inputs, normalize them with a fixed "
                               "scale (e.g. the joint's limits) instead of their statistics, or floor the std "
                               "training divides by (`demoforge bake --std-floor 0.1`; README: near-constant "
                               "inputs): a value the "
                               "demos never show, such as a block tilted by 0.01 rad, otherwise reaches the "
                               "policy as hundreds of units"))
    return out


def check_idle(ctx: Context) -> list[Finding]:
    """D005: episodes whose actions never change, or stand still for most of the episode."""
    if ctx.scan is None:
        return []
    cfg, out = ctx.config, []
    for s in ctx.scan.episodes:
        if s.idle_fraction is None:
            continue
        if s.idle_fraction >= 1.0:
            out.append(Finding("D005", "error", f"episode {s.episode}: the action never changes in {s.length} frames "
                               "(frozen actions: the recorder logged a stale command)",
                               Evidence(s.episode, None, ACTION, {"idle_fraction": s.idle_fraction}),
                               "check that the recorder reads the command sent at each tick; drop the episode"))
        elif s.idle_fraction > cfg.max_idle_fraction:
            out.append(Finding("D005", "warning", f"episode {s.episode}: {s.idle_fraction:.0%} of steps leave the "
                               f"action unchanged (threshold {cfg.max_idle_fraction:.0%})",
                               Evidence(s.episode, None, ACTION, {"idle_fraction": s.idle_fraction}),
                               "trim idle stretches (`demoforge bake --filter-idle`) or drop the episode"))
    return capped(out, cfg, "D005", "idle episodes")


def check_action_jumps(ctx: Context) -> list[Finding]:
    """D008: one-step action changes beyond max_action_speed / fps (gripper dimensions exempt: they switch)."""
    if ctx.scan is None or ACTION not in ctx.info.features:
        return []
    cfg, fps, out = ctx.config, ctx.info.fps, []
    bound = cfg.max_action_speed / fps
    names = _dim_names(ctx, ACTION)
    checked = np.array(["gripper" not in n.lower() for n in names])
    for s in ctx.scan.episodes:
        if s.max_action_step is None:
            continue
        over = np.flatnonzero(checked & (s.max_action_step > bound))
        if over.size:
            d = int(over[np.argmax(s.max_action_step[over])])
            frame = int(s.max_action_step_frame[d])
            out.append(Finding("D008", "warning", f"episode {s.episode}: action[{names[d]}] jumps "
                               f"{s.max_action_step[d]:.4g} in one step at frame {frame} "
                               f"({s.max_action_step[d] * fps:.3g} /s, bound {cfg.max_action_speed:g} /s); "
                               f"{over.size} dims over the bound",
                               Evidence(s.episode, frame, ACTION, {"dim": d, "name": names[d],
                                                                   "step": float(s.max_action_step[d]),
                                                                   "bound": bound, "dims_over": over.tolist()}),
                               "look for dropped frames or a controller reset at that frame; drop or split the "
                               "episode, or raise --max-action-speed if the robot really moves this fast"))
    return capped(out, cfg, "D008", "episodes with action jumps")


def check_stats(ctx: Context) -> list[Finding]:
    """D011: the exact statistics (meta/stats.json, or meta/stats.exact.json where `bake --std-floor`
    floored stats.json) min/max/mean/std/count of numeric features against values recomputed from the
    data; a floored stats.json against the exact statistics floored as bake.json records.

    Quantiles are not compared: recomputing them exactly needs every frame at once.
    """
    if ctx.scan is None or ctx.stats is None or ctx.scan.unreadable:
        return []  # without the unreadable episodes' rows (D001 names them) every statistic would differ
    cfg, out = ctx.config, []
    name, exact = ("stats.json", ctx.stats) if ctx.stats_exact is None else ("stats.exact.json", ctx.stats_exact)
    for key, sums in ctx.scan.sums.items():
        entry = exact.get(key)
        if not isinstance(entry, dict) or sums.count == 0:
            continue
        fresh = {"min": sums.min, "max": sums.max, "mean": sums.mean(), "std": sums.std()}
        scale = np.maximum(np.abs(fresh["mean"]), fresh["std"])
        for stat, stored in _stored(entry):
            if stored.shape != fresh[stat].shape:
                continue  # a shape mismatch is D001's
            bad = np.flatnonzero(~(np.abs(stored - fresh[stat]) <= cfg.stats_atol + cfg.stats_rtol * scale))
            if bad.size:
                d = int(bad[0])
                out.append(Finding("D011", "error", f"{name} {key}.{stat}[{d}] is {stored[d]:.6g} but the data "
                                   f"give {fresh[stat][d]:.6g} ({bad.size} dims differ)",
                                   Evidence(feature=key, values={"stat": stat, "dim": d, "stored": float(stored[d]),
                                                                 "recomputed": float(fresh[stat][d]),
                                                                 "dims": bad.tolist()}),
                                   "recompute the statistics (`demoforge dataset merge ROOT OUT` rewrites them "
                                   "from the data); policies normalize with these numbers"))
        count = entry.get("count")
        if count is not None and int(np.asarray(count).reshape(-1)[0]) != sums.count:
            out.append(Finding("D011", "warning", f"{name} {key}.count is {count} but the data hold "
                               f"{sums.count} frames",
                               Evidence(feature=key, values={"stored": jsonable(count), "frames": sums.count}),
                               "recompute the statistics after adding or removing episodes"))
    if ctx.stats_exact is not None:
        out += _check_floor(ctx)
    return capped(out, cfg, "D011", "stale statistics")


def _stored(entry: dict) -> list[tuple[str, np.ndarray]]:
    """(stat, values) of a stats.json entry's min/max/mean/std that read as numbers."""
    out = []
    for stat in _STAT_KEYS:
        try:
            out.append((stat, np.asarray(entry[stat], dtype=np.float64).reshape(-1)))
        except (KeyError, TypeError, ValueError):
            continue
    return out


def _check_floor(ctx: Context) -> list[Finding]:
    """stats.json against stats.exact.json floored at bake.json's `stats.std_floor`."""
    floor = (ctx.bake.stats_floor if ctx.bake is not None else {}).get("std_floor")
    if not isinstance(floor, (int, float)) or floor <= 0:
        return [Finding("D011", "error", "meta/stats.exact.json is present but meta/bake.json records no std floor "
                        "(stats.std_floor), so nothing says how stats.json differs from the exact statistics",
                        Evidence(values={"std_floor": jsonable(floor)}),
                        "bake the source again (with --std-floor F to floor the statistics), or delete "
                        "stats.exact.json if stats.json is exact")]
    dtypes = {key: ft.dtype for key, ft in ctx.info.features.items()}
    expected, changed = floor_spread(ctx.stats_exact, dtypes, float(floor))
    out = []
    for key, entry in expected.items():
        stored = dict(_stored(ctx.stats.get(key) or {}))
        for stat, want in _stored(entry):
            have = stored.get(stat)
            if have is None or have.shape != want.shape:
                continue  # a missing or misshapen entry is D001's
            bad = np.flatnonzero(~np.isclose(have, want, rtol=1e-9, atol=0.0))
            if bad.size:
                d = int(bad[0])
                out.append(Finding("D011", "error", f"stats.json {key}.{stat}[{d}] is {have[d]:.6g} but "
                                   f"stats.exact.json floored at {floor:g} gives {want[d]:.6g} ({bad.size} dims "
                                   "differ)",
                                   Evidence(feature=key, values={"stat": stat, "dim": d, "stored": float(have[d]),
                                                                 "expected": float(want[d]), "dims": bad.tolist()}),
                                   "bake the source again: stats.json is what a policy normalizes with"))
    if not out:
        dims = sum(len(v) for v in changed.values())
        out.append(Finding("D011", "info", f"stats.json floors the spread of {dims} dims of {len(changed)} features at "
                           f"{floor:g} (bake --std-floor); the exact statistics are in stats.exact.json",
                           Evidence(values={"std_floor": float(floor), "floored": changed}),
                           "none needed: a policy trained on this dataset normalizes with the floored spread"))
    return out


def check_success_flag(ctx: Context) -> list[Finding]:
    """D012: a per-frame or per-episode success column that holds one value everywhere."""
    if ctx.info is None:
        return []
    out = []
    fix = ("wire the success flag to the task's success test (demoforge records it from the goal predicates), "
           "or drop the column so no one trains on it")
    if ctx.scan is not None and ctx.scan.episodes:
        for key in sorted(ctx.scan.episodes[0].success_values):
            seen = sorted({v for s in ctx.scan.episodes for v in s.success_values.get(key, ())})
            if len(seen) == 1:
                out.append(Finding("D012", "warning", f"per-frame success column {key!r} is {seen[0]} in every "
                                   f"frame of all {len(ctx.scan.episodes)} episodes",
                                   Evidence(feature=key, values={"value": seen[0]}), fix))
    if ctx.episodes is not None and ctx.episodes.num_rows > 1:
        for col in ctx.episodes.column_names:
            if "success" not in col.lower() or col.startswith("stats/"):
                continue
            seen = {repr(v) for v in ctx.episodes.column(col).to_pylist()}
            if len(seen) == 1:
                out.append(Finding("D012", "warning", f"episode column {col!r} is {seen.pop()} for all "
                                   f"{ctx.episodes.num_rows} episodes", Evidence(feature=col), fix))
    return out
