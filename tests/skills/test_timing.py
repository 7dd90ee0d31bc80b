import numpy as np
import pytest

from demoforge.errors import DemoforgeError
from demoforge.sim import panda_card
from demoforge.skills import PROFILES, joint_limits, profile, time_path
from demoforge.skills.timing import check_limits

DT = 1 / 60
LIMITS = joint_limits(panda_card(), PROFILES["medium"])


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_straight_moves_keep_velocity_acceleration_and_jerk_limits_at_the_ticks(name):
    limits = joint_limits(panda_card(), PROFILES[name])
    rng = np.random.default_rng(3)
    for _ in range(20):
        q0, q1 = rng.uniform(-2, 2, 7), rng.uniform(-2, 2, 7)
        qs = time_path([q0, q1], limits, DT)
        np.testing.assert_array_equal(qs[-1], q1)
        assert check_limits(q0, qs, limits, DT) <= 1 + 1e-9
        # Synchronized on the straight joint line: every tick is q0 + s (q1 - q0).
        s = (qs - q0) / (q1 - q0)
        np.testing.assert_allclose(s, s[:, :1].repeat(7, axis=1), atol=1e-9)


def test_speed_profile_is_an_s_curve_without_a_joint_pinned_at_its_limit():
    q0, q1 = np.zeros(7), np.full(7, 0.6)
    qs = time_path([q0, q1], LIMITS, DT)
    vel = np.diff(np.vstack([q0, qs]), axis=0)[:, 0] / DT
    acc = np.diff(vel) / DT
    # Acceleration ramps up over several ticks (jerk-limited) rather than jumping to its peak.
    assert abs(acc[0]) < 0.8 * np.abs(acc).max()
    assert int(np.argmax(np.abs(acc[: len(acc) // 2]))) >= 2
    assert np.abs(vel).max() <= LIMITS.vel.min() * (1 + 1e-9)


def test_bent_paths_are_slowed_until_the_ticks_keep_the_limits():
    th = np.linspace(0, np.pi / 2, 40)
    path = np.zeros((40, 7))
    path[:, 0], path[:, 1] = 0.4 * np.cos(th), 0.4 * np.sin(th)
    qs = time_path(path, LIMITS, DT)
    np.testing.assert_array_equal(qs[-1], path[-1])
    assert check_limits(path[0], qs, LIMITS, DT) <= 1 + 1e-9


def test_sharp_corners_are_passed_at_rest():
    path = np.array([[0.0] * 7, [0.5] + [0.0] * 6, [0.5, 0.5] + [0.0] * 5])
    qs = time_path(path, LIMITS, DT)
    assert np.any(np.all(qs == path[1], axis=1))
    assert check_limits(path[0], qs, LIMITS, DT) <= 1 + 1e-9
    assert len(time_path(path[:1], LIMITS, DT)) == 0
    assert len(time_path([path[0], path[0]], LIMITS, DT)) == 0


def test_slower_profiles_take_longer():
    q1 = np.full(7, 1.0)
    lengths = [len(time_path([np.zeros(7), q1], joint_limits(panda_card(), PROFILES[n]), DT))
               for n in ("slow", "medium", "fast")]
    assert lengths[0] > lengths[1] > lengths[2]


def test_profiles_are_frozen_and_lookup_lists_them():
    with pytest.raises(AttributeError):
        PROFILES["slow"].vel_scale = 9.0
    with pytest.raises(DemoforgeError, match=r"'fast', 'medium', 'slow'"):
        profile("ludicrous")
    assert profile("medium") is PROFILES["medium"]


def test_limits_come_from_the_robot_card_scaled_by_the_profile():
    card = panda_card()
    np.testing.assert_allclose(LIMITS.vel, np.array(card.max_velocity) * PROFILES["medium"].vel_scale)
    np.testing.assert_allclose(LIMITS.jerk, np.array(card.max_jerk) * PROFILES["medium"].jerk_scale)


def test_a_mild_kink_that_would_slow_the_whole_move_is_passed_at_rest_instead():
    # A planner's detour: the last joint turns a quarter turn, bending 12 degrees half-way
    # (under CORNER); passed at speed, the bend's jerk slows the whole move several times over.
    mid = np.array([0.0, 0.0, 0.0, -0.15, 0.0, 0.08, 0.8])
    path = np.array([np.zeros(7), mid, [0.0, 0.0, 0.0, -0.18, 0.0, 0.17, 1.57]])
    bend = np.degrees(np.arccos(np.dot(mid, path[2] - mid) / np.linalg.norm(mid) / np.linalg.norm(path[2] - mid)))
    assert 5 < bend < 25
    qs = time_path(path, LIMITS, DT)
    from demoforge.skills.timing import _time_piece

    assert len(qs) < 0.75 * len(_time_piece(path, LIMITS, DT))  # resting at the bend is the quicker
    assert np.any(np.all(qs == path[1], axis=1))  # it rests on the vertex: the same path
    assert check_limits(path[0], qs, LIMITS, DT) <= 1 + 1e-9
    # a densely traced bend (more vertices) is passed at speed, however it is timed
    th = np.linspace(0, np.pi / 2, 40)
    arc = np.zeros((40, 7))
    arc[:, 0], arc[:, 1] = 0.4 * np.cos(th), 0.4 * np.sin(th)
    assert len(time_path(arc, LIMITS, DT)) == len(_time_piece(arc, LIMITS, DT))
