"""Scene draws: ranges, per-quantity streams, seeding, profiles, JSON."""

import dataclasses
import json

import pytest

from demoforge.randomize.robot_start import RobotStart
from demoforge.randomize.scene import (
    SceneDrawError,
    bake_profiles,
    draw_from_json,
    draw_to_json,
    episode_rng,
    sample_scene,
)
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
    start = RobotStart((0.41, -0.1, 0.3), (0.1, -0.2, 0.0, -2.4, 0.0, 2.3, -0.7), True, (0.0, 1.0, 0.0, 0.0), 0.3, 0.1)
    draw = dataclasses.replace(sample_scene(PARAMS, episode_rng(PARAMS, 1)), robot_start=start)
    text = draw_to_json(draw)
    assert draw_from_json(text) == draw
    assert text == json.dumps(json.loads(text), sort_keys=True) + "\n"
    assert draw_to_json(draw_from_json(text)) == text


def test_a_start_recorded_before_orientations_were_drawn_reads_as_gripper_down():
    data = json.loads(draw_to_json(sample_scene(PARAMS, episode_rng(PARAMS, 1))))
    data["robot_start"] = {"tcp_pos_base_m": [0.4, 0.0, 0.3], "arm_q_rad": [0.0] * 7, "gripper_closed": False}
    start = draw_from_json(json.dumps(data)).robot_start
    assert (start.tcp_quat_base_wxyz, start.yaw_rad, start.tilt_rad) == (None, 0.0, 0.0)


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
