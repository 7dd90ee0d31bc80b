"""Contact-stability findings from a recorded settle trace: a pure function of arrays.

The rollout that records a `SettleTrace` lives in `demoforge.sim.lint`; this module
never imports MuJoCo, so every rule here is tested on synthetic traces.

Rules (C001 suppresses C002 and C003, whose numbers are meaningless after a blow-up):

- C001 explosion: the simulator reported a bad acceleration or a non-finite state, or
  it created energy (kinetic + potential energy rose above its start by more than what
  actuators and gravity compensation put in), or max |qacc| in the trailing window grew
  far above the first window.
- C002 penetration: a contact that persists through the trailing window sits deeper
  than a tolerance.
- C003 jitter: a contact's normal force in the trailing window varies relative to
  its mean (a settled contact holds a constant force).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SEVERITY = {"C001": "error", "C002": "warning", "C003": "warning"}


@dataclass(frozen=True)
class ContactPair:
    """Two geoms that touched during the rollout; the key of a contact trace column."""

    geom1: str  # first geom name (the smaller geom id)
    geom2: str  # second geom name
    body1: str  # body holding geom1
    body2: str  # body holding geom2
    solref: tuple[float, float]  # mixed contact solref (timeconst [s], dampratio) or (-stiffness, -damping)
    solimp: tuple[float, float, float, float, float]  # mixed contact solimp (dmin, dmax, width [m], mid, power)


@dataclass(frozen=True)
class SettleTrace:
    """What a settle rollout measured; row 0 is the initial state, row k is after step k."""

    timestep: float  # physics step [s]
    integrator: str  # MuJoCo integrator name, e.g. "euler", "implicitfast"
    solver: str  # constraint solver name, e.g. "newton", "pgs"
    iterations: int  # constraint solver iterations
    body_names: tuple[str, ...]  # names indexed by qacc_body
    qacc_max: np.ndarray  # (T,) max |qacc| over dofs [m/s^2 or rad/s^2]
    qacc_body: np.ndarray  # (T,) int, index into body_names of the dof with the max |qacc|
    kinetic_energy: np.ndarray  # (T,) [J]
    energy_gain: np.ndarray  # (T,) kinetic + potential energy minus its start, minus actuator work [J]
    unstable: np.ndarray  # (T,) bool, MuJoCo warned of a bad qacc or the state is not finite
    pairs: tuple[ContactPair, ...]  # (P,) contact pairs, sorted by name
    depth: np.ndarray  # (T, P) deepest penetration of the pair's contacts [m]; NaN when apart
    normal_force: np.ndarray  # (T, P) summed contact normal force of the pair [N]; 0 when apart


@dataclass(frozen=True)
class LintThresholds:
    """Where the rules draw the line; each finding reports the threshold it crossed."""

    window_s: float = 0.25  # trailing part of the rollout judged as "after settling" [s]
    energy_gain_tol: float = 0.05  # C001: energy the simulator may create [J] (0.1 kg at 1 m/s)
    qacc_growth: float = 100.0  # C001: trailing-window max |qacc| over first-window max |qacc|
    qacc_floor: float = 1000.0  # C001: trailing max |qacc| must also exceed this [m/s^2] (~100 g)
    penetration_tol: float = 1e-3  # C002: median depth of a persistent contact [m]
    persistent_fraction: float = 0.9  # C002: share of window steps a contact must be present
    jitter_cv: float = 0.05  # C003: std / mean of a contact's normal force in the window
    min_force: float = 1e-3  # C003: contacts with a smaller mean force are not judged [N]


@dataclass(frozen=True)
class Finding:
    """One problem the linter found, with the number that tripped it and what to change."""

    code: str  # "C001" explosion, "C002" penetration, "C003" jitter
    severity: str  # "error" (C001) or "warning" (C002, C003)
    message: str  # one sentence saying what happened
    geoms: tuple[str, ...]  # geoms involved, by name
    bodies: tuple[str, ...]  # bodies involved, by name
    value: float  # the measured value, in `unit`
    threshold: float  # the threshold it crossed, in `unit`
    unit: str  # unit of value and threshold
    fix: str  # a concrete change that removes the finding


def classify(trace: SettleTrace, thresholds: LintThresholds = LintThresholds()) -> list[Finding]:
    """Findings for a settle trace, C001 first, then by code and contact pair name."""
    explosion = _explosion(trace, thresholds)
    if explosion is not None:
        return [explosion]
    window = _window(trace, thresholds)
    findings = _penetration(trace, thresholds, window) + _jitter(trace, thresholds, window)
    return sorted(findings, key=lambda f: (f.code, f.geoms))


def _window(trace: SettleTrace, thresholds: LintThresholds) -> slice:
    n = len(trace.qacc_max)
    steps = max(1, int(round(thresholds.window_s / trace.timestep)))
    return slice(max(0, n - steps), n)


def _explosion(trace: SettleTrace, t: LintThresholds) -> Finding | None:
    dt = trace.timestep
    fix = (
        f"use a smaller timestep (now {dt:g} s, try {dt / 2:g} s), keep every solref timeconst at "
        f"least 2x the timestep ({4 * dt:g} s = 4x is safer) with refsafe enabled, and separate overlapping "
        "initial poses"
    )
    overlap = _initial_overlap(trace, t)
    geoms: tuple[str, ...] = ()
    if overlap is not None:
        pair, depth = overlap
        geoms = (pair.geom1, pair.geom2)
        fix += f" ('{pair.geom1}' and '{pair.geom2}' start {depth * 1e3:.1f} mm inside each other)"
    bad = np.flatnonzero(trace.unstable)
    if bad.size:
        k = int(bad[0])
        return _c001(trace, k, geoms, f"the simulator went unstable (bad qacc or non-finite state) at t = {k * dt:.4g} s",
                     float(bad.size), 0.0, "unstable steps", fix)
    gain = np.nan_to_num(trace.energy_gain, nan=np.inf)
    k = int(np.argmax(gain)) if gain.size else 0
    if gain.size and gain[k] > t.energy_gain_tol:
        return _c001(trace, k, geoms, f"the simulator created {gain[k]:.3g} J of energy while settling "
                     f"(peak at t = {k * dt:.4g} s)", float(gain[k]), t.energy_gain_tol, "J", fix)
    window = _window(trace, t)
    late = float(np.max(trace.qacc_max[window]))
    early = float(np.max(trace.qacc_max[: window.stop - window.start]))
    if late > t.qacc_floor and late > t.qacc_growth * early:
        k = window.start + int(np.argmax(trace.qacc_max[window]))
        ratio = late / early if early > 0 else float("inf")
        return _c001(trace, k, geoms, f"max |qacc| grew {ratio:.3g}x while settling (to {late:.3g})",
                     ratio, t.qacc_growth, "x", fix)
    return None


def _c001(trace: SettleTrace, k: int, geoms: tuple[str, ...], message: str, value: float,
          threshold: float, unit: str, fix: str) -> Finding:
    body = trace.body_names[int(trace.qacc_body[k])] if trace.body_names else ""
    return Finding("C001", SEVERITY["C001"], f"explosion: {message}", geoms, (body,) if body else (),
                   value, threshold, unit, fix)


def _initial_overlap(trace: SettleTrace, t: LintThresholds) -> tuple[ContactPair, float] | None:
    if not trace.pairs:
        return None
    first = np.nan_to_num(trace.depth[0], nan=0.0)
    p = int(np.argmax(first))
    return (trace.pairs[p], float(first[p])) if first[p] > t.penetration_tol else None


def _penetration(trace: SettleTrace, t: LintThresholds, window: slice) -> list[Finding]:
    findings = []
    depth = trace.depth[window]
    for p, pair in enumerate(trace.pairs):
        present = ~np.isnan(depth[:, p])
        if present.mean() < t.persistent_fraction:
            continue
        median = float(np.median(depth[present, p]))
        if median <= t.penetration_tol:
            continue
        tc, dr = pair.solref
        stiffer = (f"solref timeconst {tc:g} -> {max(tc / 2, 2 * trace.timestep):g} s"
                   if tc > 0 else f"solref stiffness {-tc:g} -> {-4 * tc:g}")
        fix = (f"stiffen the contact: {stiffer}, solimp dmin/dmax {pair.solimp[0]:g}/{pair.solimp[1]:g} -> "
               f"0.95/0.99; or use thicker geoms or a contact margin")
        findings.append(Finding(
            "C002", SEVERITY["C002"],
            f"penetration: '{pair.geom1}' and '{pair.geom2}' stay {median * 1e3:.2f} mm inside each other after settling",
            (pair.geom1, pair.geom2), (pair.body1, pair.body2), median, t.penetration_tol, "m", fix))
    return findings


def _jitter(trace: SettleTrace, t: LintThresholds, window: slice) -> list[Finding]:
    findings = []
    force = trace.normal_force[window]
    for p, pair in enumerate(trace.pairs):
        mean = float(np.mean(force[:, p]))
        if mean < t.min_force:
            continue
        cv = float(np.std(force[:, p]) / mean)
        if cv <= t.jitter_cv:
            continue
        fix = _jitter_fix(trace, pair)
        findings.append(Finding(
            "C003", SEVERITY["C003"],
            f"jitter: the normal force between '{pair.geom1}' and '{pair.geom2}' varies by {cv * 100:.0f}% "
            f"of its mean {mean:.3g} N after settling",
            (pair.geom1, pair.geom2), (pair.body1, pair.body2), cv, t.jitter_cv, "std/mean", fix))
    return findings


def _jitter_fix(trace: SettleTrace, pair: ContactPair) -> str:
    """Only the changes that would actually move something, most effective first."""
    tc, dr = pair.solref
    steps = []
    if tc > 0 and dr < 1:
        steps.append(f"raise solref dampratio {dr:g} -> 1")
    elif tc <= 0:
        steps.append(f"raise solref damping {-dr:g} -> {max(-4 * dr, 1):g}")
    if trace.integrator not in ("implicit", "implicitfast"):
        steps.append(f"use integrator implicitfast (now {trace.integrator})")
    if trace.solver != "newton":
        steps.append(f"use solver newton (now {trace.solver})")
    if trace.iterations < 50:
        steps.append(f"allow more solver iterations (now {trace.iterations}, try 100)")
    steps.append(f"use a smaller timestep (now {trace.timestep:g} s, try {trace.timestep / 2:g} s)")
    return "; ".join(steps)
