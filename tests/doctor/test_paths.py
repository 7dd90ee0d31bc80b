"""D014 path efficiency: joint travel per operator against what the TCP's motion needs."""

from __future__ import annotations

import numpy as np
import pytest

from demoforge.doctor import run_doctor
from demoforge.doctor.paths import TcpKinematics, operator_paths, tcp_motion
from demoforge.sim.robot import panda_card
from tests.doctor import _build as b

SWING = np.array([2.0, 0.0, 0.0, 0.0, 0.0, 0.0, -2.0])  # joint1 and the wrist out and back: 8 rad of travel


def test_operator_runs_split_on_the_operator_and_keep_phase_waypoints():
    q = np.cumsum(np.full((10, 2), 0.1), axis=0)
    op = np.array([-1, 0, 0, 0, 0, 1, 1, 1, -1, -1])
    phase = np.array([-1, 0, 0, 1, 1, 2, 2, 2, -1, -1])
    runs = operator_paths(q, op, phase)
    assert [(r.operator, r.start, r.end) for r in runs] == [(0, 1, 5), (1, 5, 8)]
    assert runs[0].travel == pytest.approx(3 * 0.2)  # 3 steps of 0.1 on each of 2 joints
    np.testing.assert_allclose(runs[0].waypoints, q[[1, 3, 4]])  # start, phase change, last frame
    np.testing.assert_allclose(runs[1].waypoints, q[[5, 7]])


def test_tcp_motion_is_the_polyline_length_and_rotation():
    fk = TcpKinematics(panda_card())
    home = np.asarray(panda_card().home)
    turned = home.copy()
    turned[6] += 0.5  # the last joint turns the TCP about its own axis
    pos, rot = fk.poses(np.stack([home, turned, home]))
    dist, turn = tcp_motion(pos, rot)
    assert dist == pytest.approx(0.0, abs=1e-9) and turn == pytest.approx(1.0, abs=1e-6)


def test_d014_flags_the_operator_with_joint_detours_and_lists_its_episodes(tmp_path):
    eps = [b.operator_episode(), b.operator_episode(SWING), b.operator_episode(), b.operator_episode(SWING * 0.8)]
    result = run_doctor(b.write_operators(tmp_path / "ds", eps), checks=["D014"])
    assert len(result.findings) == 1, [str(f) for f in result.findings]
    f = result.findings[0]
    assert f.severity == "warning" and "'stack'" in f.message and "IK switched arm branch" in f.fix
    v = f.evidence.values
    assert (v["operator"], v["runs"], v["flagged"], v["episodes"]) == ("stack", 4, 2, [1, 3])
    assert f.evidence.episode == 1 and f.evidence.frame == 65  # the worst run and where it starts
    assert v["worst"]["travel_rad"] > 8.0 > 2 * v["worst"]["need_rad"] + 1.0


def test_d014_is_silent_on_efficient_operators_and_without_operator_columns(tmp_path):
    eps = [b.operator_episode() for _ in range(3)]
    assert run_doctor(b.write_operators(tmp_path / "ds", eps), checks=["D014"]).findings == ()
    assert run_doctor(b.write(tmp_path / "plain", b.clean_episodes()), checks=["D014"]).findings == ()


def test_d014_says_it_needs_a_robot_card_when_no_card_names_the_joints(tmp_path):
    names = [f"j{i}" for i in range(7)] + ["gripper"]
    root = b.write_operators(tmp_path / "ds", [b.operator_episode(SWING)], names=names)
    (f,) = run_doctor(root, checks=["D014"]).findings
    assert f.severity == "info" and "--robot" in f.fix
