import numpy as np
import pytest

from demoforge.convert import BakeError, output_ticks, project, stride_for, valid_rates
from tests.convert._sources import JOINTS, OFFSET, SQUEEZE, episode, motion

T = 12


def _q_g(ticks):
    m = motion(T)
    return m["q"][ticks], m["gripper"][ticks]


def test_state_is_arm_q_and_gripper_at_the_seen_tick():
    p = project(episode(T), "joint_pos", 20)
    q, g = _q_g([0, 3, 6, 9])
    np.testing.assert_array_equal(p.ticks, [0, 3, 6, 9])
    np.testing.assert_array_equal(p.state, np.column_stack([q, g]).astype(np.float32))
    assert p.state_names == (*JOINTS, "gripper") and p.state_parts == {"arm": (0, 3), "gripper": (3, 4)}


def test_joint_pos_is_achieved_q_one_output_tick_later_and_stays_at_the_end():
    p = project(episode(T), "joint_pos", 20)  # stride 3
    q, g = _q_g([3, 6, 9, 9])
    np.testing.assert_array_equal(p.action, np.column_stack([q, g]).astype(np.float32))


def test_joint_pos_at_native_rate():
    p = project(episode(T), "joint_pos")
    q, g = _q_g([*range(1, T), T - 1])
    np.testing.assert_array_equal(p.action, np.column_stack([q, g]).astype(np.float32))


def test_joint_vel_is_the_finite_difference_times_rate():
    p = project(episode(T), "joint_vel", 15)  # stride 4: ticks 0, 4, 8
    # q[t, j] = (j + 1) t / 256, so over 4 ticks at 15 Hz: v_j = (j + 1) * 4 / 256 * 15
    v = np.array([[(j + 1) * 4 / 256 * 15 for j in range(3)]] * 2 + [[0.0, 0.0, 0.0]])
    g = motion(T)["gripper"][[4, 8, 8]]
    np.testing.assert_array_equal(p.action, np.column_stack([v, g]).astype(np.float32))


def test_joint_target_is_the_command_in_force_unclamped():
    p = project(episode(T), "joint_target", 30)
    q, _ = _q_g(output_ticks(T, 2))
    np.testing.assert_array_equal(p.action[:, :3], (q + OFFSET).astype(np.float32))
    np.testing.assert_array_equal(p.action[:, 3], np.full(6, SQUEEZE, np.float32))  # > 1: squeeze, kept


def test_raw_cmd_is_verbatim():
    ep = episode(T)
    p = project(ep, "raw_cmd", 12)
    np.testing.assert_array_equal(p.action, ep.raw_command[[0, 5, 10]].astype(np.float32))
    assert p.action_names == (*JOINTS, "gripper")


@pytest.mark.parametrize("rate", [60, 30, 20, 15, 12, 10])
def test_conventions_agree_at_every_rate(rate):
    ep = episode(30)
    pos, vel, tgt = (project(ep, c, rate) for c in ("joint_pos", "joint_vel", "joint_target"))
    np.testing.assert_array_equal(pos.state, vel.state)
    np.testing.assert_array_equal(pos.state, tgt.state)
    np.testing.assert_allclose(vel.action[:, :3], (pos.action[:, :3] - pos.state[:, :3]) * rate, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(vel.action[:, 3], pos.action[:, 3])


def test_rate_must_divide_the_native_rate_and_the_error_lists_valid_rates():
    assert valid_rates(60) == [60, 30, 20, 15, 12, 10, 6, 5, 4, 3, 2, 1]
    assert stride_for(60, None) == 1 and stride_for(60, 15) == 4
    for bad in (7, 25, 90, 0):
        with pytest.raises(BakeError, match=r"valid rates are \[60, 30, 20, 15, 12, 10, 6"):
            stride_for(60, bad)


def test_joint_target_refused_under_a_torque_mode_law():
    with pytest.raises(BakeError, match="torque"):
        project(episode(T, mode="joint_torque"), "joint_target")
    project(episode(T, mode="joint_torque"), "joint_vel")  # the achieved motion is still fine


def test_conventions_needing_commands_refused_without_them():
    ep = episode(T, target=None, target_gripper=None, raw_command=None, reader="lerobot", law=None)
    for convention in ("joint_target", "raw_cmd"):
        with pytest.raises(BakeError, match="joint_pos or joint_vel"):
            project(ep, convention)


def test_raw_cmd_refused_for_cartesian_deltas_at_a_lower_rate():
    ep = episode(T, mode="cartesian_delta", raw_command=np.zeros((T, 7)))
    assert project(ep, "raw_cmd").action_names == ("dx", "dy", "dz", "rx", "ry", "rz", "gripper")
    with pytest.raises(BakeError, match="per native tick"):
        project(ep, "raw_cmd", 30)


def test_unknown_convention_lists_the_known():
    with pytest.raises(BakeError, match="joint_pos.*joint_target.*joint_vel.*raw_cmd"):
        project(episode(T), "ee_pose")
