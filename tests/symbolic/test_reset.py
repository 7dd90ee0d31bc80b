"""Reset-state sampling: abstraction equals the PDDL init for every family, determinism, errors."""

import dataclasses

import mujoco
import numpy as np
import pytest

from demoforge.randomize.robot_start import RobotStartParams
from demoforge.randomize.scene import bake_profiles, episode_rng, sample_scene
from demoforge.scenes import build_task_scene
from demoforge.sim import restore
from demoforge.symbolic import ResetOptions, SymbolError, Tolerances, abstract, reset_rng, sample_reset_state
from demoforge.tasks import FAMILIES, generate_family, parse_task
from demoforge.tasks.library import domain_text
from tests.symbolic.scenes import LEFT, make_draw, make_params, make_task

SMALL = {"stack_three": {}, "stack_n": {"n": 3}, "unstack": {"n": 3}, "pnp": {"n": 2, "distractors": 1},
         "flip": {"n": 2, "distractors": 1}, "rotate": {"n": 2, "distractors": 1}}


def _setup(generated, *, profile_seed=0):
    task = parse_task(generated.problem_pddl, domain_text=domain_text("blocks"), problem_file=f"{generated.name}.pddl")
    draw = bake_profiles(generated.scene, 1, profile_seed)[0]
    scene, binding = build_task_scene(task, generated.scene, draw)
    return task, draw, scene, binding


def test_every_shipped_family_is_covered():
    assert set(SMALL) == set(FAMILIES)


@pytest.mark.parametrize("family", sorted(SMALL))
def test_reset_abstraction_equals_init_over_seeds(family):
    for generated in generate_family(family, count=2, seed=11, **SMALL[family]):
        task, draw, scene, binding = _setup(generated)
        for k in range(3):
            state = sample_reset_state(scene, binding, generated.scene, draw, reset_rng(generated.scene, 7, 0, k))
            # Judge the stored snapshot, not the sampler's own verdict: restore it into fresh data.
            fresh = mujoco.MjData(scene.model)
            restore(scene.model, fresh, state.state)
            assert abstract(scene.model, fresh, binding) == frozenset(task.init), (generated.name, k)
            assert fresh.time == 0.0


@pytest.mark.parametrize("family", sorted(SMALL))
def test_reset_states_stay_true_for_a_second_and_with_random_robot_starts(family):
    for generated in generate_family(family, count=2, seed=5, **SMALL[family]):
        task, draw, scene, binding = _setup(generated)
        for k in range(2):
            sample_reset_state(scene, binding, generated.scene, draw, reset_rng(generated.scene, 1, 0, k),
                               robot_start=RobotStartParams(p_closed=0.5))
            mujoco.mj_step(scene.model, scene.data, round(1.0 / scene.model.opt.timestep))
            assert abstract(scene.model, scene.data, binding) == frozenset(task.init), (generated.name, k)


@pytest.mark.parametrize("family", sorted(SMALL))
def test_reset_abstraction_equals_init_over_many_seeds_with_distractors(family):
    options = {**SMALL[family], "distractors": 2}
    if family in ("stack_n", "unstack"):
        options["n"] = 5
    for generated in generate_family(family, count=8, seed=21, **options):
        task, draw, scene, binding = _setup(generated)
        for k in range(4):
            state = sample_reset_state(scene, binding, generated.scene, draw, reset_rng(generated.scene, 2, 0, k),
                                       robot_start=RobotStartParams())
            fresh = mujoco.MjData(scene.model)
            restore(scene.model, fresh, state.state)
            assert abstract(scene.model, fresh, binding) == frozenset(task.init), (generated.name, k)


def test_same_seed_gives_bitwise_identical_states_and_other_seeds_differ():
    generated = generate_family("unstack", count=1, seed=3, n=3)[0]
    _, draw, scene, binding = _setup(generated)
    a = sample_reset_state(scene, binding, generated.scene, draw, reset_rng(generated.scene, 9, 0, 0))
    _, _, scene2, binding2 = _setup(generated)
    b = sample_reset_state(scene2, binding2, generated.scene, draw, reset_rng(generated.scene, 9, 0, 0))
    c = sample_reset_state(scene2, binding2, generated.scene, draw, reset_rng(generated.scene, 9, 0, 1))
    assert a.state.tobytes() == b.state.tobytes() and a.poses == b.poses
    assert a.state.tobytes() != c.state.tobytes()


def test_towers_are_built_bottom_up_and_oriented_per_facts():
    init = [("hand_empty",), ("on", "a", "b"), ("on_table", "b"), ("clear", "a"), ("on_table", "c"), ("clear", "c"),
            ("face_up", "a", "px"), ("yaw", "a", "yaw90"), ("face_up", "b", "pz"), ("yaw", "b", "yaw0"),
            ("face_up", "c", "ny"), ("yaw", "c", "yaw270")]
    task = make_task(init)
    params = make_params()
    scene, binding = build_task_scene(task, params, make_draw())
    state = sample_reset_state(scene, binding, params, make_draw(), np.random.default_rng(0))
    poses = {p.block: p for p in state.poses}
    assert poses["a"].support == "b" and poses["b"].support == "table" and poses["a"].pos[2] > poses["b"].pos[2]
    assert (poses["c"].face, poses["c"].yaw) == ("ny", "yaw270")
    assert abstract(scene.model, scene.data, binding) == frozenset(task.init)


def test_in_region_facts_place_the_block_in_its_region():
    init = [("hand_empty",), *[(p, b) for b in "abc" for p in ("on_table", "clear")],
            *[a for b in "abc" for a in (("face_up", b, "pz"), ("yaw", b, "yaw0"))], ("in_region", "b", "left")]
    task = make_task(init, regions=["left"])
    params = make_params(regions=(LEFT,))
    scene, binding = build_task_scene(task, params, make_draw())
    for seed in range(3):
        state = sample_reset_state(scene, binding, params, make_draw(), np.random.default_rng(seed))
        b = next(p for p in state.poses if p.block == "b")
        assert b.region == "left" and 0.18 <= b.pos[1] <= 0.30
        assert abstract(scene.model, scene.data, binding) == frozenset(task.init)


def test_disjoint_placement_windows_are_all_used():
    init = [("hand_empty",), ("on_table", "a"), ("clear", "a"), ("face_up", "a", "pz"), ("yaw", "a", "yaw0")]
    task = make_task(init, blocks=("a",))
    windows = ((-0.20, -0.10), (0.10, 0.20))
    params = make_params(blocks=("a",), placement_x_m=windows)
    scene, binding = build_task_scene(task, params, make_draw(("a",)))
    cx = scene.spec.table.center[0]
    xs = []
    for seed in range(12):
        state = sample_reset_state(scene, binding, params, make_draw(("a",)), np.random.default_rng(seed))
        xs.append(state.poses[0].pos[0] - cx)
    assert all(any(lo + 0.02 <= x <= hi - 0.02 for lo, hi in windows) for x in xs)
    assert any(x < 0 for x in xs) and any(x > 0 for x in xs)


def test_the_arm_starts_at_the_reset_states_drawn_start():
    generated = generate_family("stack_three", count=1, seed=2)[0]
    _, draw, scene, binding = _setup(generated)
    state = sample_reset_state(scene, binding, generated.scene, draw, reset_rng(generated.scene, 0, 0, 0),
                               robot_start=RobotStartParams(p_closed=1.0))
    start = state.robot_start
    q = scene.data.qpos[scene.robot.arm_qpos]
    assert np.allclose(q, start.arm_q_rad, atol=0.02)
    assert np.allclose(scene.data.ctrl[scene.robot.arm_actuators], start.arm_q_rad)
    assert scene.data.ctrl[scene.robot.gripper_actuator] == scene.robot.gripper_ctrl[1]


def test_a_start_fixed_in_the_draw_is_kept_and_home_is_the_default():
    generated = generate_family("stack_three", count=1, seed=2)[0]
    _, draw, scene, binding = _setup(generated)
    home = sample_reset_state(scene, binding, generated.scene, draw, reset_rng(generated.scene, 0, 0, 0))
    assert home.robot_start is None
    assert np.allclose(scene.data.ctrl[scene.robot.arm_actuators], scene.robot.card.home)
    drawn = sample_reset_state(scene, binding, generated.scene, draw, reset_rng(generated.scene, 0, 0, 0),
                               robot_start=RobotStartParams(p_closed=0.0))
    assert drawn.poses == home.poses  # the start draws from its own stream: the blocks stay where they were
    fixed = dataclasses.replace(draw, robot_start=drawn.robot_start)
    again = sample_reset_state(scene, binding, generated.scene, fixed, reset_rng(generated.scene, 0, 0, 0))
    assert again.robot_start == drawn.robot_start and again.state.tobytes() == drawn.state.tobytes()


def test_disagreeing_atoms_are_named_after_the_last_attempt():
    generated = generate_family("stack_three", count=1, seed=2)[0]
    task = parse_task(generated.problem_pddl, domain_text=domain_text("blocks"), problem_file="s3.pddl")
    draw = sample_scene(generated.scene, episode_rng(generated.scene, 0))
    scene, binding = build_task_scene(task, generated.scene, draw, tolerances=Tolerances(z_gap_m=-1.0))
    with pytest.raises(SymbolError) as err:
        sample_reset_state(scene, binding, generated.scene, draw, np.random.default_rng(0),
                           options=ResetOptions(attempts=2, settle_s=0.05))
    text = str(err.value)
    assert "stack_three-all-0000" in text and "2 attempts" in text and "missing (on_table" in text
    assert "extra none" in text


def test_a_block_too_big_for_its_window_is_a_clear_error():
    init = [("hand_empty",), ("on_table", "a"), ("clear", "a"), ("face_up", "a", "pz"), ("yaw", "a", "yaw0")]
    task = make_task(init, blocks=("a",))
    params = make_params(blocks=("a",), placement_x_m=((0.0, 0.02),))
    scene, binding = build_task_scene(task, params, make_draw(("a",)))
    with pytest.raises(SymbolError, match="does not fit in the placement windows"):
        sample_reset_state(scene, binding, params, make_draw(("a",)), np.random.default_rng(0),
                           options=ResetOptions(attempts=1))


def test_inconsistent_init_facts_are_all_reported():
    init = [("on", "a", "b"), ("on", "b", "a"), ("on_table", "c"), ("holding", "c"), ("face_up", "a", "pz"),
            ("face_up", "a", "nz"), ("yaw", "a", "yaw0"), ("face_up", "b", "pz"), ("yaw", "b", "yaw0"),
            ("face_up", "c", "pz")]
    task = make_task(init)
    params = make_params()
    scene, binding = build_task_scene(task, params, make_draw())
    with pytest.raises(SymbolError) as err:
        sample_reset_state(scene, binding, params, make_draw(), np.random.default_rng(0))
    text = str(err.value)
    for part in ("'a' needs exactly one face_up", "'c' needs exactly one yaw", "init holds ['c']",
                 "'c' needs exactly one of on_table, on or holding", "do not stand on the table"):
        assert part in text


def test_reset_options_are_records():
    assert dataclasses.is_dataclass(ResetOptions) and ResetOptions().attempts >= 1


def test_a_stacked_objects_jitter_scales_with_its_supports_top_face():
    from demoforge.symbolic.orientation import block_rotation, top_half_edge

    def _top_half_edge(half, rot):  # the up axis as reset reads it from a block's rotation
        return float(top_half_edge(half, np.argmax(np.abs(rot[2]))))

    plate = np.array([0.08, 0.08, 0.01])  # a plate lying flat: its top face is 16 cm across
    assert _top_half_edge(plate, block_rotation("pz", "yaw0")) == pytest.approx(0.08)
    brick = np.array([0.06, 0.02, 0.03])
    assert _top_half_edge(brick, block_rotation("pz", "yaw0")) == pytest.approx(0.02)
    assert _top_half_edge(brick, block_rotation("px", "yaw0")) == pytest.approx(0.02)  # x up: y, z lie flat
    assert _top_half_edge(brick, block_rotation("py", "yaw0")) == pytest.approx(0.03)  # y up: x, z lie flat
