"""Time parametrization of joint paths under velocity, acceleration and jerk limits.

A path is a polyline in joint space. It is followed at rest-to-rest S-curve speed: the
path parameter `s` (arc length) moves along a jerk-limited profile computed by `ruckig`,
so every joint starts and ends at rest with zero acceleration and the speed ramps
smoothly. The limits of `s` are the joint limits divided by the steepest joint slope
|dq_j/ds| of the path, so on a straight segment every limit holds exactly. On a bent path
(IK along a Cartesian line) the curvature adds a little acceleration; the sampled ticks
are checked by finite differences (velocity, acceleration, jerk per joint) and the
profile is slowed down uniformly until they hold. Polylines with sharp corners (planner
paths) are split at the corners and the arm rests briefly there (a corner cannot be
passed at speed under a jerk limit). A milder kink passed at speed can still need the whole
stretch slowed several times over (a planner's three-point detour round a tower turned the
wrist a quarter turn in 6.5 s); a stretch of a few vertices is therefore also timed with a rest
at each vertex, and the shorter of the two is kept. Durations end on whole control ticks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from ruckig import InputParameter, Result, Ruckig, Trajectory

from demoforge.errors import DemoforgeError
from demoforge.sim.robot import DEFAULT_MOTION_LIMITS, RobotCard

CORNER = math.radians(25.0)  # direction change of a polyline that the arm stops at [rad]
# Stretches of up to this many vertices (a planner's simplified path; a traced Cartesian line has
# more) are also timed with a rest at every vertex, in case that is quicker than passing them.
REST_AT_VERTICES = 8
_CHECK_SLACK = 1e-9  # relative slack of the finite-difference check


@dataclass(frozen=True)
class MotionProfile:
    """Fractions of the robot card's joint limits that skill motions use."""

    name: str  # "slow", "medium", "fast" or a user's name
    vel_scale: float  # fraction of each joint's velocity limit [-]
    acc_scale: float  # fraction of each joint's acceleration limit [-]
    jerk_scale: float  # fraction of each joint's jerk limit [-]


# Well inside the Panda's limits so the position servos track the targets closely and a
# held block is never shaken loose; "medium" is the default of `generate`. Skill moves are
# short (a few tenths of a radian), so their time is set by the acceleration, not the
# velocity: medium accelerates at 70% (bench_motion: pick/place operators 10-15% shorter
# than at 50%, yield unchanged).
PROFILES: dict[str, MotionProfile] = {
    "slow": MotionProfile("slow", 0.3, 0.2, 0.02),
    "medium": MotionProfile("medium", 0.6, 0.7, 0.05),
    "fast": MotionProfile("fast", 0.8, 0.7, 0.1),
}


def profile(name: str) -> MotionProfile:
    """The named built-in profile; the error lists them."""
    if name not in PROFILES:
        raise DemoforgeError(f"unknown motion profile {name!r}; profiles: {sorted(PROFILES)}")
    return PROFILES[name]


@dataclass(frozen=True)
class JointLimits:
    """Per-joint limits a trajectory keeps at every control tick."""

    vel: np.ndarray  # (n,) [rad/s]
    acc: np.ndarray  # (n,) [rad/s^2]
    jerk: np.ndarray  # (n,) [rad/s^3]


def joint_limits(card: RobotCard, prof: MotionProfile) -> JointLimits:
    """The card's limits (DEFAULT_MOTION_LIMITS where it states none) scaled by `prof`."""
    n = len(card.arm_joints)
    out = []
    for values, default, scale in zip((card.max_velocity, card.max_acceleration, card.max_jerk),
                                      DEFAULT_MOTION_LIMITS, (prof.vel_scale, prof.acc_scale, prof.jerk_scale),
                                      strict=True):
        out.append(np.full(n, default * scale) if values is None else np.asarray(values, float) * scale)
    return JointLimits(*out)


def time_path(qpath, limits: JointLimits, dt: float) -> np.ndarray:
    """(N, n) joint targets [rad] along the polyline `qpath` (first row: where the arm rests
    now), one per tick of `dt` [s], ending exactly on the last row; (0, n) when it has no length."""
    qpath = _dedupe(np.atleast_2d(np.asarray(qpath, float)))
    if len(qpath) < 2:
        return np.zeros((0, qpath.shape[1]))
    parts = [_time_stretch(qpath[a:b + 1], limits, dt) for a, b in _pieces(qpath)]
    return np.concatenate(parts)


def _time_stretch(qpath: np.ndarray, limits: JointLimits, dt: float) -> np.ndarray:
    """Ticks along one stretch between sharp corners: passing its vertices at speed, or, for a
    stretch of at most REST_AT_VERTICES vertices, resting at each one if that ends sooner
    (the same path either way: each straight segment needs no slowing)."""
    whole = _time_piece(qpath, limits, dt)
    if 2 < len(qpath) <= REST_AT_VERTICES:
        rests = np.concatenate([_time_piece(qpath[i:i + 2], limits, dt) for i in range(len(qpath) - 1)])
        if len(rests) < len(whole):
            return rests
    return whole


def check_limits(q_start: np.ndarray, ticks: np.ndarray, limits: JointLimits, dt: float) -> float:
    """Largest ratio of a finite-difference velocity, acceleration or jerk of `ticks` (at
    rest before at `q_start` and after) to its limit; <= 1 when the limits hold."""
    path = np.vstack([q_start, q_start, q_start, ticks, ticks[-1], ticks[-1]])
    ratios = [np.abs(np.diff(path, n=k, axis=0)).max(axis=0) / dt**k / lim
              for k, lim in ((1, limits.vel), (2, limits.acc), (3, limits.jerk))]
    return float(max(r.max() for r in ratios))


def _dedupe(qpath: np.ndarray) -> np.ndarray:
    keep = [0] + [i for i in range(1, len(qpath)) if np.abs(qpath[i] - qpath[i - 1]).max() > 1e-12]
    return qpath[keep]


def _pieces(qpath: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) row indices of the stretches between sharp corners."""
    d = np.diff(qpath, axis=0)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    turns = np.arccos(np.clip(np.sum(d[1:] * d[:-1], axis=1), -1.0, 1.0))
    cuts = [0, *(int(i) + 1 for i in np.flatnonzero(turns > CORNER)), len(qpath) - 1]
    return list(zip(cuts[:-1], cuts[1:], strict=True))


def _time_piece(qpath: np.ndarray, limits: JointLimits, dt: float) -> np.ndarray:
    seg = np.linalg.norm(np.diff(qpath, axis=0), axis=1)
    s_knots = np.concatenate([[0.0], np.cumsum(seg)])
    length = float(s_knots[-1])
    slope = (np.abs(np.diff(qpath, axis=0)) / seg[:, None]).max(axis=0)  # steepest |dq_j/ds|
    moving = slope > 1e-12
    v = float(np.min(limits.vel[moving] / slope[moving]))
    a = float(np.min(limits.acc[moving] / slope[moving]))
    j = float(np.min(limits.jerk[moving] / slope[moving]))
    stretch = 1.0
    for attempt in range(12):
        s = _profile(length, v / stretch, a / stretch**2, j / stretch**3, dt)
        ticks = np.column_stack([np.interp(s, s_knots, qpath[:, k]) for k in range(qpath.shape[1])])
        ticks[-1] = qpath[-1]
        ratio = check_limits(qpath[0], ticks, limits, dt)
        if ratio <= 1.0 + _CHECK_SLACK:
            return ticks
        # A smooth path's jerk falls with the cube of the stretch; a kink's only linearly.
        stretch *= (ratio ** (1 / 3) if attempt < 2 else ratio) * 1.01
    raise DemoforgeError(f"time_path: could not keep the joint limits along a path of {len(qpath)} points; "
                         "the path is too bent for the control rate (sample it more densely)")


def _profile(length: float, v: float, a: float, j: float, dt: float) -> np.ndarray:
    """Path positions at ticks 1..N of a rest-to-rest jerk-limited move over `length`."""
    otg, inp, traj = Ruckig(1), InputParameter(1), Trajectory(1)
    inp.current_position, inp.target_position = [0.0], [length]
    inp.max_velocity, inp.max_acceleration, inp.max_jerk = [v], [a], [j]
    if otg.calculate(inp, traj) not in (Result.Working, Result.Finished):
        raise DemoforgeError(f"ruckig found no profile over {length} with limits {v}, {a}, {j}")
    ticks = max(1, math.ceil(traj.duration / dt - 1e-9))
    if ticks * dt > traj.duration + 1e-12:
        inp.minimum_duration = ticks * dt  # end on a tick: the same move, slowed a little
        otg.calculate(inp, traj)
    s = np.array([traj.at_time(k * dt)[0][0] for k in range(1, ticks + 1)])
    s[-1] = length
    return s
