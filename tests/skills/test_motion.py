import numpy as np
import pytest

from demoforge.errors import DemoforgeError
from demoforge.skills import PROFILES, MotionProfile, profile, segment, trajectory
from demoforge.skills.motion import densify, segment_duration

DT = 1 / 60


def _check_limits(q_start, qs, prof):
    """Finite differences of the ticks, starting and ending at rest."""
    path = np.vstack([q_start, q_start, qs, qs[-1]])  # at rest before and after
    vel = np.diff(path, axis=0) / DT
    acc = np.diff(path, n=2, axis=0) / DT**2
    assert np.abs(vel).max() <= prof.max_vel * (1 + 1e-9)
    assert np.abs(acc).max() <= prof.max_acc * (1 + 1e-9)


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_segments_respect_velocity_and_acceleration_limits_and_end_on_target(name):
    prof = PROFILES[name]
    rng = np.random.default_rng(3)
    for _ in range(20):
        q0, q1 = rng.uniform(-2, 2, 7), rng.uniform(-2, 2, 7)
        qs = segment(q0, q1, prof, DT)
        np.testing.assert_array_equal(qs[-1], q1)
        _check_limits(q0, qs, prof)


def test_short_moves_are_triangular_long_ones_reach_cruise_speed():
    prof = MotionProfile("t", 1.0, 2.0)
    short = segment(np.zeros(2), np.array([0.1, 0.0]), prof, DT)
    long = segment(np.zeros(2), np.array([2.0, -1.0]), prof, DT)
    # Durations match the closed forms within one tick.
    assert abs(len(short) * DT - 2 * np.sqrt(0.1 / 2.0)) <= DT
    assert abs(len(long) * DT - (2.0 / 1.0 + 1.0 / 2.0)) <= DT
    assert np.abs(np.diff(long[:, 0])).max() / DT == pytest.approx(1.0, rel=0.02)
    # Joints stay synchronized on the straight line.
    np.testing.assert_allclose(long[:, 1], -0.5 * long[:, 0], atol=1e-12)


def test_trajectory_rests_at_each_waypoint_and_keeps_limits_across_them():
    prof = PROFILES["fast"]
    waypoints = np.array([[0.0, 0.0], [0.5, -0.2], [0.5, 0.8], [-0.3, 0.1]])
    qs = trajectory(waypoints, prof, DT)
    _check_limits(waypoints[0], qs, prof)
    for w in waypoints[1:]:
        assert np.any(np.all(qs == w, axis=1))
    assert len(trajectory(waypoints[:1], prof, DT)) == 0
    assert len(segment(waypoints[0], waypoints[0], prof, DT)) == 0


def test_slower_profiles_take_longer():
    q1 = np.full(7, 1.0)
    lengths = [len(segment(np.zeros(7), q1, PROFILES[n], DT)) for n in ("slow", "medium", "fast")]
    assert lengths[0] > lengths[1] > lengths[2]
    assert segment_duration(0.0, 1.0, 1.0) == 0.0


def test_profiles_are_frozen_and_lookup_lists_them():
    with pytest.raises(AttributeError):
        PROFILES["slow"].max_vel = 9.0
    with pytest.raises(DemoforgeError, match=r"'fast', 'medium', 'slow'"):
        profile("ludicrous")
    assert profile("medium") is PROFILES["medium"]


def test_densify_bounds_the_joint_step_and_keeps_the_ends():
    path = densify([[0.0, 0.0], [1.0, 0.3]], 0.05)
    assert np.abs(np.diff(path, axis=0)).max() <= 0.05 + 1e-12
    np.testing.assert_array_equal(path[0], [0, 0])
    np.testing.assert_array_equal(path[-1], [1.0, 0.3])
