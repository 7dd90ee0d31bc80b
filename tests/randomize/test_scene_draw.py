"""Scene draws: ranges, per-quantity streams, seeding, profiles, JSON, robot start poses."""

import dataclasses
import json

import mujoco
import numpy as np
import pytest

from demoforge.randomize.scene import (
    RobotStartParams,
    SceneDrawError,
    bake_profiles,
    draw_from_json,
    draw_to_json,
    episode_rng,
    sample_scene,
)
from demoforge.sim import bind_robot, panda_card, robot_spec
from demoforge.tasks import generate_family

PARAMS = generate_family("stack_three", count=1, seed=4, distractors=2)[0].scene


def test_draws_lie_in_their_ranges_and_name_every_block():
    for episode in range(20):
        draw = sample_scene(PARAMS, episode_rng(PARAMS, episode))
        assert [b for b, _ in draw.block_size_m] == sorted(b for b, _ in PARAMS.blocks)
        assert all(PARAMS.block_size_m[0] <= s <= PARAMS.block_size_m[1] for _, s in draw.block_size_m)
        assert PARAMS.table_height_offset_m[0] <= draw.table_height_offset_m <= PARAMS.table_height_offset_m[1]
        assert PARAMS.friction[0] <= draw.friction <= PARAMS.friction[1]
        assert draw.problem == PARAMS.problem and draw.robot_start is None


def test_same_problem_and_episode_give_the_same_draw_and_others_differ():
    a = sample_scene(PARAMS, episode_rng(PARAMS, 3))
    assert a == sample_scene(PARAMS, episode_rng(PARAMS, 3))
    assert a != sample_scene(PARAMS, episode_rng(PARAMS, 4))
    other = dataclasses.replace(PARAMS, seed=PARAMS.seed + 1)
    assert a != sample_scene(other, episode_rng(other, 3))


def test_changing_one_range_leaves_the_other_quantities_alone():
    base = sample_scene(PARAMS, episode_rng(PARAMS, 0))
    wider = dataclasses.replace(PARAMS, block_size_m=(0.02, 0.06))
    changed = sample_scene(wider, episode_rng(wider, 0))
    assert changed.block_size_m != base.block_size_m
    assert (changed.friction, changed.table_height_offset_m) == (base.friction, base.table_height_offset_m)
    grippy = dataclasses.replace(PARAMS, friction=(1.5, 2.0))
    changed = sample_scene(grippy, episode_rng(grippy, 0))
    assert changed.block_size_m == base.block_size_m and changed.friction != base.friction


def test_degenerate_ranges_give_their_value():
    fixed = dataclasses.replace(PARAMS, block_size_m=(0.04, 0.04), friction=(1.0, 1.0))
    draw = sample_scene(fixed, episode_rng(fixed, 0))
    assert {s for _, s in draw.block_size_m} == {0.04} and draw.friction == 1.0


def test_json_round_trip_is_exact_and_stable():
    draw = sample_scene(PARAMS, episode_rng(PARAMS, 1), robot_start=RobotStartParams())
    text = draw_to_json(draw)
    assert draw_from_json(text) == draw
    assert text == json.dumps(json.loads(text), sort_keys=True) + "\n"
    assert draw_to_json(draw_from_json(text)) == text


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.pop("friction"), "missing key 'friction'"),
    (lambda d: d.update(extra=1), "unknown key 'extra'"),
    (lambda d: d.update(schema="x/9"), "schema 'x/9'"),
    (lambda d: d.update(friction="high"), "ValueError"),
])
def test_bad_draw_json_is_reported(edit, message):
    data = json.loads(draw_to_json(sample_scene(PARAMS, episode_rng(PARAMS, 0))))
    edit(data)
    with pytest.raises(SceneDrawError, match=message):
        draw_from_json(json.dumps(data), file="d.json")
    with pytest.raises(SceneDrawError, match="d.json:1"):
        draw_from_json("{", file="d.json")


def test_baked_profiles_are_fixed_per_package_seed():
    profiles = bake_profiles(PARAMS, 4, seed=7)
    assert len(profiles) == 4 and len(set(profiles)) == 4
    assert profiles == bake_profiles(PARAMS, 4, seed=7)
    assert bake_profiles(PARAMS, 6, seed=7)[:4] == profiles  # more profiles keep the first ones
    assert bake_profiles(PARAMS, 4, seed=8) != profiles
    assert profiles[0] != sample_scene(PARAMS, episode_rng(PARAMS, 0))  # profiles and episodes never coincide
    with pytest.raises(SceneDrawError, match="must be >= 1"):
        bake_profiles(PARAMS, 0, seed=7)


def test_robot_start_reaches_its_target_gripper_down():
    card = panda_card()
    model = robot_spec(card).compile()
    data = mujoco.MjData(model)
    index = bind_robot(model, card)
    data.qpos[index.arm_qpos] = card.home
    mujoco.mj_kinematics(model, data)
    down = data.site_xmat[index.tcp_site].copy()
    opts = RobotStartParams()
    for episode in range(5):
        start = sample_scene(PARAMS, episode_rng(PARAMS, episode), robot_start=opts).robot_start
        lo, hi = np.array([opts.tcp_x_m, opts.tcp_y_m, opts.tcp_z_m]).T
        assert np.all(lo <= start.tcp_pos_base_m) and np.all(np.array(start.tcp_pos_base_m) <= hi)
        data.qpos[index.arm_qpos] = start.arm_q_rad
        mujoco.mj_kinematics(model, data)
        assert np.linalg.norm(data.site_xpos[index.tcp_site] - start.tcp_pos_base_m) < 2e-3
        assert np.allclose(data.site_xmat[index.tcp_site], down, atol=0.03)


def test_gripper_start_follows_its_probability():
    def closed(p):
        opts = RobotStartParams(p_closed=p)
        return [sample_scene(PARAMS, episode_rng(PARAMS, e), robot_start=opts).robot_start.gripper_closed
                for e in range(12)]

    assert not any(closed(0.0)) and all(closed(1.0))
    assert 0 < sum(closed(0.5)) < 12


def test_unreachable_robot_window_is_a_clear_error():
    far = RobotStartParams(tcp_x_m=(2.0, 2.1), ik_tries=2)
    with pytest.raises(SceneDrawError, match="no IK solution for 2 robot start targets"):
        sample_scene(PARAMS, episode_rng(PARAMS, 0), robot_start=far)


def test_bad_robot_start_options_are_all_reported():
    bad = RobotStartParams(tcp_z_m=(0.4, 0.2), p_closed=1.5, ik_tries=0)
    with pytest.raises(SceneDrawError) as err:
        sample_scene(PARAMS, episode_rng(PARAMS, 0), robot_start=bad)
    assert "tcp_z_m: lo 0.4 > hi 0.2" in str(err.value) and "p_closed" in str(err.value) and "ik_tries" in str(err.value)
