"""Joint-space motion: rest-to-rest straight segments with trapezoidal time scaling.

Every segment moves all joints along the straight line between two configurations,
synchronized, starting and ending at rest, so the velocity and acceleration limits of a
`MotionProfile` hold for every joint at every instant and also for the sampled ticks:
finite differences of consecutive targets never exceed `max_vel * dt` and second
differences never exceed `max_acc * dt**2`. Durations are rounded up to whole control
ticks by slowing the segment down uniformly (which only lowers velocity and acceleration).
IK waypoints close together in the workspace (descend, lift) give near-straight
Cartesian motion because the joint-space line between them is short.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from demoforge.errors import DemoforgeError


@dataclass(frozen=True)
class MotionProfile:
    """Speed limits of skill motions, the same for every arm joint."""

    name: str  # "slow", "medium", "fast" or a user's name
    max_vel: float  # joint speed limit [rad/s]
    max_acc: float  # joint acceleration limit [rad/s^2]


# Well inside the Panda's limits (2.2-2.6 rad/s, 7.5-20 rad/s^2) so the position servos track
# the targets closely and a held block never sees more than ~4 m/s^2.
PROFILES: dict[str, MotionProfile] = {
    "slow": MotionProfile("slow", 0.5, 1.5),
    "medium": MotionProfile("medium", 1.0, 3.0),
    "fast": MotionProfile("fast", 1.8, 6.0),
}


def profile(name: str) -> MotionProfile:
    """The named built-in profile; the error lists them."""
    if name not in PROFILES:
        raise DemoforgeError(f"unknown motion profile {name!r}; profiles: {sorted(PROFILES)}")
    return PROFILES[name]


def segment_duration(distance: float, max_vel: float, max_acc: float) -> float:
    """Rest-to-rest time [s] of a trapezoidal (or triangular) profile over `distance`."""
    if distance <= 0:
        return 0.0
    if max_vel**2 / max_acc >= distance:  # never reaches cruise speed
        return 2.0 * math.sqrt(distance / max_acc)
    return distance / max_vel + max_vel / max_acc


def _trapezoid(t: np.ndarray, total: float, max_vel: float, max_acc: float) -> np.ndarray:
    """Distance covered at times `t` along a unit-distance profile lasting `total` [s]."""
    t_acc = min(max_vel / max_acc, total / 2)
    v_peak = max_acc * t_acc
    s = np.where(
        t < t_acc, 0.5 * max_acc * t**2,
        np.where(t <= total - t_acc, 0.5 * max_acc * t_acc**2 + v_peak * (t - t_acc),
                 1.0 - 0.5 * max_acc * (total - t) ** 2),
    )
    return np.clip(s, 0.0, 1.0)


def segment(q0, q1, prof: MotionProfile, dt: float) -> np.ndarray:
    """(N, n) joint targets [rad] from just after `q0` to exactly `q1`, one per tick of `dt` [s];
    (0, n) when they coincide."""
    q0, q1 = np.asarray(q0, float), np.asarray(q1, float)
    delta = q1 - q0
    longest = float(np.abs(delta).max()) if delta.size else 0.0
    if longest < 1e-12:
        return np.zeros((0, len(q0)))
    # In the path parameter s in [0, 1], the joint that moves furthest binds both limits.
    vel, acc = prof.max_vel / longest, prof.max_acc / longest
    total = segment_duration(1.0, vel, acc)
    ticks = max(1, math.ceil(total / dt - 1e-9))
    stretch = total / (ticks * dt)  # <= 1: slows the profile to end on a tick
    t = np.arange(1, ticks + 1) * dt * stretch
    s = _trapezoid(t, total, vel, acc)
    out = q0 + s[:, None] * delta
    out[-1] = q1  # exactly, not q0 + (q1 - q0)
    return out


def trajectory(waypoints, prof: MotionProfile, dt: float) -> np.ndarray:
    """Targets through `waypoints` (first = the current targets), resting at each one;
    (N, n), not including the first waypoint."""
    waypoints = np.atleast_2d(np.asarray(waypoints, float))
    parts = [segment(a, b, prof, dt) for a, b in zip(waypoints[:-1], waypoints[1:], strict=True)]
    return np.concatenate(parts) if parts else np.zeros((0, waypoints.shape[1]))


def densify(qpath, max_step: float) -> np.ndarray:
    """The polyline through `qpath` resampled so no joint moves more than `max_step` [rad]
    between neighbours (both ends kept)."""
    qpath = np.atleast_2d(np.asarray(qpath, float))
    out = [qpath[:1]]
    for a, b in zip(qpath[:-1], qpath[1:], strict=True):
        n = max(1, math.ceil(float(np.abs(b - a).max()) / max_step))
        out.append(a + (b - a) * (np.arange(1, n + 1)[:, None] / n))
    return np.concatenate(out)
