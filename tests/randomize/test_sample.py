import json
from pathlib import Path
from dataclasses import fields, replace

import numpy as np
import pytest

from demoforge.randomize import (
    DrawTargets,
    RandomizationError,
    RandomizationSpec,
    dumps_draw,
    load_spec,
    loads_draw,
    sample,
    split_draw,
)

FULL = RandomizationSpec(
    mass_scale=(0.8, 1.2), damping_scale=(0.5, 2.0), frictionloss_scale=(0.5, 1.5), kp_scale=(0.9, 1.1),
    kd_scale=(0.9, 1.1), camera_pos_jitter_m=0.01, camera_rot_jitter_rad=0.05, spawn_jitter=0.1,
    gravity_jitter_mps2=0.2, props=True,
)
# Spec field -> the draw key it produces.
DRAWN = {"mass_scale": "mass_scale", "damping_scale": "damping_scale", "frictionloss_scale": "frictionloss_scale",
         "kp_scale": "kp_scale", "kd_scale": "kd_scale", "camera_pos_jitter_m": "camera_pos_offset_m",
         "camera_rot_jitter_rad": "camera_rot_offset_rad", "spawn_jitter": "spawn_offset",
         "gravity_jitter_mps2": "gravity_delta_mps2"}


def test_golden_small_draw():
    # Pins the stream derivation (SeedSequence keyed by a hash of the field name) and the format.
    targets = DrawTargets(("b",), ("j",), (), (), ("a1", "a2"), ("cam",))
    draw = sample(RandomizationSpec(kp_scale=(0.5, 1.5), gravity_jitter_mps2=0.1), 7, targets)
    assert dumps_draw(draw) == (
        '{\n  "gravity_delta_mps2": 0.09466292689,\n  "kp_scale": {\n    "a1": 0.7652795977,\n'
        '    "a2": 0.6204394934\n  },\n  "schema": "demoforge.randomization/1"\n}\n'
    )


def test_same_seed_gives_byte_identical_draws_and_other_seeds_differ(targets):
    first = dumps_draw(sample(FULL, 42, targets))
    assert dumps_draw(sample(FULL, 42, targets)) == first
    assert dumps_draw(sample(FULL, np.random.SeedSequence(42), targets)) == first
    assert dumps_draw(sample(FULL, 43, targets)) != first
    # A Generator is consumed: two calls give two different draws, reproducibly.
    gen_a, gen_b = np.random.default_rng(5), np.random.default_rng(5)
    a = [dumps_draw(sample(FULL, gen_a, targets)) for _ in range(2)]
    assert a == [dumps_draw(sample(FULL, gen_b, targets)) for _ in range(2)] and a[0] != a[1]


@pytest.mark.parametrize("disabled", list(DRAWN))
def test_disabling_one_field_leaves_every_other_draw_unchanged(targets, disabled):
    full = sample(FULL, 11, targets)
    less = sample(replace(FULL, **{disabled: None}), 11, targets)
    assert DRAWN[disabled] not in less
    assert less == {k: v for k, v in full.items() if k != DRAWN[disabled]}


def test_props_switch_appends_prop_values_without_changing_the_robots(targets):
    with_props = sample(FULL, 3, targets)
    robot_only = sample(replace(FULL, props=False), 3, targets)
    assert "cube" in with_props["mass_scale"] and "cube" in with_props["damping_scale"]
    assert not any(n in robot_only["mass_scale"] for n in targets.prop_bodies)
    assert not any(n in robot_only["damping_scale"] for n in targets.prop_joints)
    for key in ("mass_scale", "damping_scale", "frictionloss_scale"):
        assert robot_only[key] == {n: v for n, v in with_props[key].items() if n.startswith("robot/")}


def test_draws_stay_in_their_ranges(targets):
    for seed in range(20):
        d = sample(FULL, seed, targets)
        assert all(0.8 <= v <= 1.2 for v in d["mass_scale"].values())
        assert set(d["kp_scale"]) == set(targets.arm_joints) == set(d["spawn_offset"])
        assert all(abs(v) <= 0.1 for v in d["spawn_offset"].values())
        assert all(np.all(np.abs(v) <= 0.01) for v in d["camera_pos_offset_m"].values())
        assert all(np.linalg.norm(v) <= 0.05 + 1e-9 for v in d["camera_rot_offset_rad"].values())
        assert abs(d["gravity_delta_mps2"]) <= 0.2


def test_camera_subset_and_unknown_camera(targets):
    d = sample(replace(FULL, cameras=("front",)), 0, targets)
    assert list(d["camera_pos_offset_m"]) == ["front"] == list(d["camera_rot_offset_rad"])
    with pytest.raises(RandomizationError, match="'nope'.*robot/wrist"):
        sample(replace(FULL, cameras=("nope",)), 0, targets)


def test_draw_text_round_trips_exactly_and_is_plain_sorted_json(targets):
    draw = sample(FULL, 9, targets)
    text = dumps_draw(draw)
    assert loads_draw(text) == draw
    assert dumps_draw(loads_draw(text)) == text
    assert json.loads(text) == draw
    parsed = json.loads(text)
    assert list(parsed) == sorted(parsed) and list(parsed["mass_scale"]) == sorted(parsed["mass_scale"])
    assert '"front": [' in text  # number triples stay on one line, so a diff shows whole vectors
    model_part, runtime = split_draw(draw)
    assert set(model_part) == {"mass_scale", "damping_scale", "frictionloss_scale", "gravity_delta_mps2"}
    assert set(runtime) == {"kp_scale", "kd_scale", "camera_pos_offset_m", "camera_rot_offset_rad", "spawn_offset"}


def test_all_off_spec_draws_only_the_schema(targets):
    assert sample(RandomizationSpec(), 0, targets) == {"schema": "demoforge.randomization/1"}
    example = load_spec(Path(__file__).parents[2] / "examples" / "randomize" / "physics.yaml")
    draw = sample(replace(example, cameras=("front",)), 0, targets)
    assert set(draw) == {"schema", *DRAWN.values()}


@pytest.mark.parametrize("text, words", [
    ('{"schema": "demoforge.randomization/1", "mass": {}}', ["'mass'", "known keys"]),
    ('{"schema": "other/2"}', ["schema", "other/2"]),
    ('{"schema": "demoforge.randomization/1", "kp_scale": {"j": NaN}}', ["kp_scale", "finite"]),
    ('{"schema": "demoforge.randomization/1", "camera_pos_offset_m": {"front": [1, 2]}}', ["camera_pos_offset_m"]),
    ('[1, 2]', ["JSON object"]),
    ('{"schema": ', ["not JSON"]),
])
def test_invalid_draws_are_rejected(text, words):
    with pytest.raises(RandomizationError) as info:
        loads_draw(text, where="episode_3.json")
    for word in ["episode_3.json", *words]:
        assert word in str(info.value)


def test_bad_seed_is_rejected(targets):
    for seed in (-1, 1.5, "7", True):
        with pytest.raises(RandomizationError, match="seed"):
            sample(FULL, seed, targets)


def test_spec_field_list_is_covered():
    # A new spec field must be added to DRAWN (or be a scene override / option) so the
    # independence test covers it.
    options = {"cameras", "props", "friction", "block_size_m", "table_height_offset_m"}
    assert {f.name for f in fields(RandomizationSpec)} == set(DRAWN) | options
