"""Random robot starts: windows, orientation, IK, self- and scene collision, per reset state."""

import dataclasses
from pathlib import Path

import mujoco
import numpy as np
import pytest

from demoforge.errors import DemoforgeError
from demoforge.randomize.robot_start import (
    RobotStartParams,
    check_robot_start,
    load_robot_start,
    params_from_dict,
    params_to_dict,
    propose_start,
    self_collisions,
)
from demoforge.randomize.scene import bake_profiles
from demoforge.scenes import build_task_scene
from demoforge.sim import bind_robot, panda_card, restore, robot_spec
from demoforge.symbolic import SymbolError, reset_rng, sample_reset_state
from demoforge.tasks import generate_family, parse_task
from demoforge.tasks.library import domain_text

FOLDED = np.array([1.15, -1.62, 1.82, 0.21, -1.0, -0.39, -2.36])  # the hand folded back onto the upper arm


def _streams(seed):
    return np.random.default_rng(seed).spawn(2)


def test_starts_reach_their_drawn_pose_inside_the_windows():
    card = panda_card()
    model = robot_spec(card).compile()
    data = mujoco.MjData(model)
    index = bind_robot(model, card)
    data.qpos[index.arm_qpos] = card.home
    mujoco.mj_kinematics(model, data)
    down = data.site_xmat[index.tcp_site].reshape(3, 3)[:, 2].copy()  # the gripper axis at home
    opts = RobotStartParams(yaw_rad=(-0.8, 0.8), tilt_max_rad=0.3)
    pose_rng, grip_rng = _streams(0)
    yaws, tilts = [], []
    for _ in range(30):
        start, why = propose_start(opts, card, pose_rng, grip_rng)
        assert start is not None, why
        lo, hi = np.array([opts.tcp_x_m, opts.tcp_y_m, opts.tcp_z_m]).T
        assert np.all(lo <= start.tcp_pos_base_m) and np.all(np.array(start.tcp_pos_base_m) <= hi)
        data.qpos[index.arm_qpos] = start.arm_q_rad
        mujoco.mj_kinematics(model, data)
        assert np.linalg.norm(data.site_xpos[index.tcp_site] - start.tcp_pos_base_m) < 2e-3
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, data.site_xmat[index.tcp_site])
        assert abs(abs(quat @ np.array(start.tcp_quat_base_wxyz)) - 1.0) < 1e-3  # the orientation it was drawn
        axis = data.site_xmat[index.tcp_site].reshape(3, 3)[:, 2]
        assert np.degrees(np.arccos(np.clip(axis @ down, -1, 1))) <= np.degrees(opts.tilt_max_rad) + 1.0
        assert -0.8 <= start.yaw_rad <= 0.8 and 0.0 <= start.tilt_rad <= 0.3
        yaws.append(start.yaw_rad)
        tilts.append(start.tilt_rad)
    assert np.ptp(yaws) > 0.8 and max(tilts) > 0.15  # the windows are used, not just their centre


def test_the_gripper_draw_has_its_own_stream():
    card = panda_card()

    def starts(p):
        pose_rng, grip_rng = _streams(3)
        return [propose_start(RobotStartParams(p_closed=p), card, pose_rng, grip_rng)[0] for _ in range(12)]

    never, always, half = starts(0.0), starts(1.0), starts(0.5)
    assert not any(s.gripper_closed for s in never) and all(s.gripper_closed for s in always)
    assert 0 < sum(s.gripper_closed for s in half) < 12
    assert [s.arm_q_rad for s in never] == [s.arm_q_rad for s in always]  # p_closed moves no pose


def test_self_collision_is_found_and_home_is_free():
    card = panda_card()
    assert self_collisions(card, np.asarray(card.home), False) == []
    assert self_collisions(card, np.asarray(card.home), True) == []  # the closed pads touch by design
    assert "hand/link4" in self_collisions(card, FOLDED, False)


@pytest.mark.parametrize(("data", "needles"), [
    ({"tcp_x_m": [0.5, 0.3]}, ["robot_start.tcp_x_m", "lo 0.5 > hi 0.3", "swap them"]),
    ({"yaw_rad": [1.0, -1.0]}, ["robot_start.yaw_rad", "lo 1.0 > hi -1.0", "swap them"]),
    ({"tcp_z_m": [-0.05, 0.3]}, ["robot_start.tcp_z_m", "-0.05", "below the table top", "raise it"]),
    ({"p_closed": 1.5}, ["robot_start.p_closed", "1.5", "probability in [0, 1]"]),
    ({"p_closed": -0.1}, ["robot_start.p_closed", "-0.1", "probability in [0, 1]"]),
    ({"tilt_max_rad": 2.0}, ["robot_start.tilt_max_rad", "2.0", "[0, 1.5708]"]),
    ({"tries": 0}, ["robot_start.tries", "0", "[1, 10000]"]),
    ({"tcp_y_m": 0.2}, ["robot_start.tcp_y_m", "0.2", "[lo, hi] pair"]),
    ({"z_min": 0.2}, ["unknown key 'z_min'", "tcp_z_m"]),
])
def test_bad_windows_name_the_field_the_value_and_the_fix(data, needles):
    with pytest.raises(DemoforgeError) as err:
        params_from_dict(data)
    assert all(n in str(err.value) for n in needles), str(err.value)


def test_every_bad_window_is_reported_at_once_and_a_spec_file_round_trips(tmp_path):
    with pytest.raises(DemoforgeError) as err:
        check_robot_start(RobotStartParams(tcp_x_m=(0.5, 0.3), tcp_z_m=(0.0, 0.3), p_closed=2.0))
    assert all(f in str(err.value) for f in ("tcp_x_m", "tcp_z_m", "p_closed"))
    spec = tmp_path / "start.yaml"
    spec.write_text("tcp_x_m: [0.35, 0.45]\np_closed: 0.0\n")
    opts = load_robot_start(spec)
    assert opts == dataclasses.replace(RobotStartParams(), tcp_x_m=(0.35, 0.45), p_closed=0.0)
    assert params_from_dict(params_to_dict(opts)) == opts
    spec.write_text("p_closed: 3\n")
    with pytest.raises(DemoforgeError, match=r"start.yaml.p_closed: 3 must be a probability"):
        load_robot_start(spec)
    with pytest.raises(DemoforgeError, match="does not exist"):
        load_robot_start(tmp_path / "none.yaml")
    shipped = load_robot_start(Path(__file__).parents[2] / "examples/generate/robot-start.yaml")
    assert shipped == dataclasses.replace(RobotStartParams(), yaw_rad=(-1.5708, 1.5708))  # the defaults, written out


def _scene(family="stack_three", **options):
    generated = generate_family(family, count=1, seed=6, **options)[0]
    task = parse_task(generated.problem_pddl, domain_text=domain_text("blocks"), problem_file=f"{generated.name}.pddl")
    draw = bake_profiles(generated.scene, 1, 0)[0]
    scene, binding = build_task_scene(task, generated.scene, draw)
    return generated.scene, draw, scene, binding


def _robot_touches(scene, state, start) -> list[str]:
    """What the arm touches at `start`, the blocks where reset `state` has them."""
    m, d, robot = scene.model, mujoco.MjData(scene.model), set(scene.robot.body_ids.tolist())
    restore(m, d, state)
    d.qpos[scene.robot.arm_qpos] = start.arm_q_rad  # the start itself, before the scene settled
    mujoco.mj_forward(m, d)
    return sorted({m.body(int(m.geom_bodyid[g])).name for c in d.contact[: d.ncon] for g in (c.geom1, c.geom2)
                   if (int(m.geom_bodyid[c.geom1]) in robot) != (int(m.geom_bodyid[c.geom2]) in robot)
                   and int(m.geom_bodyid[g]) not in robot})


def test_each_reset_state_draws_its_own_collision_free_start():
    params, draw, scene, binding = _scene(distractors=2)
    opts = RobotStartParams()
    starts = []
    for i in range(6):
        state = sample_reset_state(scene, binding, params, draw, reset_rng(params, 4, 0, i), robot_start=opts)
        start = state.robot_start
        starts.append(start.arm_q_rad)
        assert _robot_touches(scene, state.state, start) == [], i
        assert self_collisions(scene.robot.card, np.asarray(start.arm_q_rad), start.gripper_closed) == []
        again = sample_reset_state(scene, binding, params, draw, reset_rng(params, 4, 0, i), robot_start=opts)
        assert again.robot_start == start and again.state.tobytes() == state.state.tobytes()
    assert len(set(starts)) == 6


def test_a_start_touching_a_block_is_drawn_again(monkeypatch):
    """A window inside a block where the first attempt placed it: every draw there (closed fingers)
    touches it, so the attempt fails and the next one, with the blocks elsewhere, keeps a start
    that touches none."""
    import demoforge.symbolic.reset as reset

    seen = []
    contacts = reset._robot_contacts
    monkeypatch.setattr(reset, "_robot_contacts", lambda scene: seen.append(contacts(scene)) or seen[-1])
    params, draw, scene, binding = _scene()
    home = sample_reset_state(scene, binding, params, draw, reset_rng(params, 0, 0, 0))
    base = scene.data.xpos[scene.robot.body_ids[0]]
    x, y = np.array(home.poses[0].pos[:2]) - base[:2]  # the same first placement: the start has its own stream
    on_block = RobotStartParams(tcp_x_m=(x - 0.005, x + 0.005), tcp_y_m=(y - 0.005, y + 0.005), tcp_z_m=(0.02, 0.03),
                                tilt_max_rad=0.0, p_closed=1.0, tries=5)
    seen.clear()
    state = sample_reset_state(scene, binding, params, draw, reset_rng(params, 0, 0, 0), robot_start=on_block)
    assert state.attempts >= 2 and all(home.poses[0].block in hits for hits in seen[:5])
    assert _robot_touches(scene, state.state, state.robot_start) == []


def test_a_window_out_of_reach_fails_at_once_with_the_windows_and_the_fix():
    params, draw, scene, binding = _scene()
    far = RobotStartParams(tcp_x_m=(2.0, 2.1), tries=3)
    with pytest.raises(SymbolError) as err:
        sample_reset_state(scene, binding, params, draw, reset_rng(params, 0, 0, 0), robot_start=far)
    text = str(err.value)
    assert "after 1 attempts" in text and "none of 3 robot starts" in text and "3 out of reach" in text
    assert "x [2.0, 2.1]" in text and "move the windows" in text
