"""Task-family generators: every family parses and is solvable, output is deterministic,
splits keep looks disjoint, options are checked."""

import dataclasses
from pathlib import Path

import pytest

from demoforge.errors import TaskError
from demoforge.tasks import (
    FAMILIES, domain_text, generate_family, holds, parse_task, plan, scene_from_json, scene_to_json, write_tasks,
)
from demoforge.tasks.scene import Region, SceneParams


def _task(generated):
    return parse_task(generated.problem_pddl, domain_text=domain_text("blocks"), problem_file=generated.name)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_parses_is_not_trivial_and_plans(family):
    for generated in generate_family(family, count=3, seed=11, distractors=1):
        task = _task(generated)
        assert not holds(task, task.goal, frozenset(task.init)), generated.name
        result = plan(task, time_budget_s=2.0)
        assert result.solved and result.plan, (generated.name, result)
        roles = dict((name, look.role) for name, look in generated.scene.blocks)
        assert sorted(roles) == sorted(n for n, t in task.objects if t == "block")
        assert list(roles.values()).count("distractor") == 1


def test_same_seed_gives_byte_identical_files(tmp_path):
    for run in ("a", "b"):
        write_tasks(generate_family("stack_n", count=4, seed=5, n=4, distractors=2, split="train"), tmp_path / run)
    first = {p.name: p.read_bytes() for p in (tmp_path / "a").iterdir()}
    second = {p.name: p.read_bytes() for p in (tmp_path / "b").iterdir()}
    assert first == second and len(first) == 1 + 2 * 4


def test_other_seed_or_index_gives_other_tasks():
    a = generate_family("pnp", count=6, seed=1, distractors=2)
    b = generate_family("pnp", count=6, seed=2, distractors=2)
    assert [t.problem_pddl for t in a] != [t.problem_pddl for t in b]
    assert len({t.scene.seed for t in a}) == 6
    # Asking for more tasks keeps the first ones: task i depends on (seed, family, split, i) only.
    assert generate_family("pnp", count=3, seed=1, distractors=2) == a[:3]


@pytest.mark.parametrize("split_by", ["colour", "glyph"])
def test_train_and_test_looks_are_disjoint(split_by):
    def looks(split):
        tasks = generate_family("stack_n", count=20, seed=0, n=3, distractors=2, split=split, split_by=split_by)
        return {(name if split_by == "colour" else look.glyph) for t in tasks for name, look in t.scene.blocks}

    train, test = looks("train"), looks("test")
    assert train and test and not train & test


def test_stack_three_goal_is_a_three_tower():
    task = _task(generate_family("stack_three", count=1, seed=0)[0])
    assert task.goal.operands and len(task.goal.operands) == 2
    assert {p.name for p in task.goal.operands} == {"on"}


def test_unknown_family_lists_the_families():
    with pytest.raises(TaskError, match="unknown task family 'stak'; families: flip, pnp, rotate, stack_n"):
        generate_family("stak", count=1, seed=0)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"colour": "red"}, r"unknown option\(s\) colour for family 'stack_n'; options: block_size_m"),
        ({"n": 1}, r"n: family 'stack_n' needs at least 2"),
        ({"n": 12, "split": "train"}, r"12 blocks need 12 distinct colours but split 'train' has 8"),
        ({"split": "val"}, r"split: 'val' is not one of all, train, test"),
        ({"distractors": -1}, r"distractors: -1 must be >= 0"),
        ({"block_size_m": (0.05, 0.03)}, r"block_size_m: lo 0.05 > hi 0.03"),
        ({"placement_x_m": ((0.0, 0.2), (0.1, 0.3))}, r"placement_x_m: interval \[0.1, 0.3\] overlaps"),
    ],
)
def test_bad_options_are_named(options, expected):
    with pytest.raises(TaskError, match=expected):
        generate_family("stack_n", count=1, seed=0, **options)


def test_stack_three_refuses_other_heights():
    with pytest.raises(TaskError, match="stack_three always has 3 blocks"):
        generate_family("stack_three", count=1, seed=0, n=4)


def test_scene_sidecar_round_trips_with_windows_and_regions():
    scene = generate_family("pnp", count=1, seed=3, placement_x_m=((-0.2, -0.05), (0.05, 0.2)),
                            friction=(0.4, 0.9))[0].scene
    text = scene_to_json(scene)
    assert scene_from_json(text) == scene
    assert isinstance(scene, SceneParams) and [r for r, _ in scene.regions] == ["left", "right"]
    assert scene.block_size_m == (0.03, 0.05)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda t: t.replace('"schema"', '"schemaa"'), r"missing key 'schema'[\s\S]*unknown key 'schemaa'"),
        (lambda t: t.replace('"friction": [0.6, 1.2]', '"friction": [1.2, 0.6]'), r"friction: lo 1.2 > hi 0.6"),
        (lambda t: t.replace('"role": "task"', '"role": "hero"'), r"role: 'hero' is not one of task, distractor"),
        (lambda t: t[:-3], r"scene.json:\d+: not JSON"),
    ],
)
def test_bad_sidecar_is_named(edit, expected):
    text = scene_to_json(generate_family("flip", count=1, seed=0)[0].scene)
    with pytest.raises(TaskError, match=expected):
        scene_from_json(edit(text), file="x.scene.json")


def test_overlapping_regions_are_refused():
    scene = generate_family("pnp", count=1, seed=0)[0].scene
    bad = dataclasses.replace(scene, regions=(("a", Region((0.0, 0.2), (0.0, 0.2))), ("b", Region((0.1, 0.3), (0.1, 0.3)))))
    with pytest.raises(TaskError, match="regions: 'a' and 'b' overlap"):
        scene_to_json(bad)


def test_shipped_examples_match_the_generator():
    """examples/tasks was written by `demoforge tasks gen stack_three --problems 1 --task-seed 0
    --distractors 1 --out examples/tasks`; a change of generator output shows up here."""
    examples = Path(__file__).parents[2] / "examples" / "tasks"
    generated = generate_family("stack_three", count=1, seed=0, distractors=1)[0]
    assert (examples / f"{generated.name}.pddl").read_text() == generated.problem_pddl
    assert (examples / f"{generated.name}.scene.json").read_text() == scene_to_json(generated.scene)
    assert (examples / "blocks.pddl").read_text() == domain_text("blocks")


def test_bad_scene_options_are_refused_even_for_zero_tasks():
    with pytest.raises(TaskError, match=r"placement_y_m: \(\) must be a non-empty list"):
        generate_family("flip", count=0, seed=0, placement_y_m=())
    with pytest.raises(TaskError, match=r"friction: 0.5 is not a \[lo, hi\] pair"):
        generate_family("flip", count=1, seed=0, friction=0.5)
