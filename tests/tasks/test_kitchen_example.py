"""The mesh task package shipped in examples/tasks/kitchen: cups, bowls and plates (PDDL subtypes of
block, built by the package's ObjectTypes as CoACD-decomposed meshes) generated, judged by the
package's own predicates, rendered, baked, checked by the doctor and loaded by the real lerobot."""

import dataclasses
import json
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.sim import SceneSpec, Table, body_half_extents, build_scene, half_extents
from demoforge.tasks import package as registry

KITCHEN = Path(__file__).parents[2] / "examples" / "tasks" / "kitchen" / "kitchen_task.py"

pytest.importorskip("coacd")
pytest.importorskip("trimesh")




@pytest.fixture
def kitchen(isolated):
    return registry.load_package(str(KITCHEN))


def _cli(*args: str) -> str:
    res = CliRunner().invoke(app, [*args])
    assert res.exit_code == 0, res.output
    return res.output


def test_the_mesh_shapes_are_free_props_whose_box_is_their_mesh(kitchen):
    """Each type's prop is a mesh scaled by the drawn size; the bounding box the predicates and skills
    read (body_half_extents, from the compiled pieces) is the mesh's; the concave ones come in pieces."""
    table = Table()
    for typ, pieces in (("cup", range(2, 200)), ("bowl", range(2, 200)), ("plate", range(1, 2))):
        small = kitchen.object_types[typ].build(typ, 0.03, (0.5, 0.5, 0.5, 1.0), None)
        big = kitchen.object_types[typ].build(typ, 0.05, (0.5, 0.5, 0.5, 1.0), None)
        assert big.scale > small.scale and np.all(half_extents(big) > half_extents(small))
        prop = dataclasses.replace(big, pos=(*table.center, table.height + float(half_extents(big)[2]) + 1e-3))
        scene = build_scene(SceneSpec(props=(prop,), table=table))
        body = scene.model.body(typ).id
        assert scene.model.body_geomnum[body] in pieces
        np.testing.assert_allclose(body_half_extents(scene.model, body), half_extents(big), atol=1e-9)
        for _ in range(200):  # it stands on the table top where its box says
            mujoco.mj_step(scene.model, scene.data)
        assert abs(scene.data.xpos[body][2] - half_extents(big)[2] - table.height) < 2e-3


def test_a_box_geom_gives_its_own_half_size():
    from demoforge.sim import Box

    scene = build_scene(SceneSpec(props=(Box("b", (0.02, 0.04, 0.06), (0.5, 0.0, 0.5)),)))
    np.testing.assert_array_equal(body_half_extents(scene.model, scene.model.body("b").id), [0.01, 0.02, 0.03])


def test_tasks_list_shows_the_object_types(kitchen):
    out = json.loads(_cli("tasks", "list", "--json", "--task-package", str(KITCHEN)))
    assert out["object_types"]["cup"]["package"] == "kitchen"
    assert out["families"]["cup_in_bowl"]["types"] == ["cup", "bowl"]
    assert out["domains"]["kitchen"]["predicates"]["in"] == "evaluated"


@pytest.mark.parametrize("family, goal, distractors", [("cup_in_bowl", "(in ", "0"), ("cup_on_plate", "(on ", "1")])
def test_each_family_generates_and_its_goal_holds_at_the_end(kitchen, tmp_path, family, goal, distractors):
    """Generated with only the base facts the domain declares (no orientation relations), a box
    distractor beside the meshes when asked; every episode reaches the goal the package judges."""
    _cli("tasks", "gen", family, "--task-package", str(KITCHEN), "--problems", "2", "--task-seed", "3", "--distractors",
         distractors, "--out", str(tmp_path / "t"))
    problems = sorted(p for p in (tmp_path / "t").glob("*.pddl") if p.with_suffix(".scene.json").is_file())
    text = problems[0].read_text()
    assert " - cup" in text and goal in text and "tip_yaw" not in text and "(hand_empty)" in text
    assert (" - block" in text) == (distractors == "1")
    out = _cli("generate", *map(str, problems), "--domain", "kitchen", "--task-package", str(KITCHEN),
               "--episodes-per-problem", "1", "--out", str(tmp_path / "raw"))
    assert "2/2 episodes succeeded" in out


def test_a_free_subtype_nobody_builds_is_named(isolated, tmp_path):
    """A domain whose `mug - block` has no ObjectType.build: the scene refuses it, naming the object and type."""
    from demoforge import taskapi as T

    domain = (Path(KITCHEN).with_name("kitchen.pddl").read_text()
              .replace("cup bowl plate - block", "mug - cup cup bowl plate - block").replace("demoforge-kitchen", "mugs"))
    kitchen = registry.load_package(str(KITCHEN))
    mugs = T.TaskPackage("mugs", domain=domain, families={"mug_in_bowl": dataclasses.replace(
        kitchen.families["cup_in_bowl"], types=("mug", "bowl"))})
    T.register(mugs)
    _cli("tasks", "gen", "mug_in_bowl", "--task-package", str(KITCHEN), "--problems", "1", "--task-seed", "0", "--out", str(tmp_path / "t"))
    res = CliRunner().invoke(app, ["generate", str(tmp_path / "t" / "mug_in_bowl-all-0000.pddl"), "--domain", "mugs", "--episodes-per-problem", "1",
                                   "--out", str(tmp_path / "raw")])
    assert res.exit_code == 2, res.output
    assert "is of type 'mug', which no task package builds" in res.output and "Traceback" not in res.output


def test_commands_that_rebuild_a_package_scene_name_the_package_missing_and_load_it_with_task_package(
        isolated, monkeypatch, tmp_path):
    """A dataset of the kitchen's cups and bowls, opened where its package is not loaded (a new
    process, as each command is): replay and render exit 2 naming the types, the domain and
    --task-package, leave nothing behind, and the same commands with --task-package succeed."""
    before = dict(registry._PACKAGES)  # the built-in packages alone
    _cli("tasks", "gen", "cup_in_bowl", "--task-package", str(KITCHEN), "--problems", "1", "--task-seed", "0",
         "--out", str(tmp_path / "t"))
    _cli("generate", str(tmp_path / "t" / "cup_in_bowl-all-0000.pddl"), "--domain", "kitchen", "--task-package",
         str(KITCHEN), "--episodes-per-problem", "1", "--out", str(tmp_path / "raw"))
    source, out = str(tmp_path / "raw" / "success"), tmp_path / "rendered"
    monkeypatch.setattr(registry, "_PACKAGES", before)
    monkeypatch.setattr(registry, "_LOADED", [])
    commands = (["replay", source], ["render", source, "--look", "plain", "--cameras", "front", "--out", str(out)])
    for argv in commands:
        res = CliRunner().invoke(app, argv)
        assert res.exit_code == 2, res.output
        assert ("object type(s) 'bowl', 'cup' of domain 'demoforge-kitchen' come from a task package that is not "
                "loaded: load it with --task-package") in " ".join(res.output.split()), res.output
    assert not out.exists()
    for argv in commands:
        _cli(*argv, "--task-package", str(KITCHEN))
    assert (out / "meta" / "info.json").is_file()


@pytest.mark.conformance
@pytest.mark.slow
def test_a_kitchen_run_renders_bakes_passes_the_doctor_and_loads_in_real_lerobot(kitchen, tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance"))
    from lerobot_harness import lerobot_python_or_skip, probe_many, require_dump

    from demoforge.dataset import open_dataset

    python = lerobot_python_or_skip()
    out = _cli("run", "--task-package", str(KITCHEN), "--family", "cup_in_bowl", "--problems", "2",
               "--episodes-per-problem", "1", "--look", "plain", "--out-dir", str(tmp_path), "--experiment-id", "k")
    assert "2 episodes, 2 successes" in out and "doctor: 0 errors" in out
    root = tmp_path / "k" / "annotated"
    ds = open_dataset(root)
    assert ds.num_episodes == 2 and "observation.images.front" in ds.info.features
    (dump,) = probe_many(python, [root], tmp_path / "probe")
    dump = require_dump(dump)
    assert dump.meta["num_episodes"] == 2 and dump.meta["num_frames"] == ds.info.total_frames
    want = np.concatenate([ds.read_episode(i, ["observation.state"])["observation.state"] for i in ds.episode_indices])
    np.testing.assert_array_equal(dump.columns["observation.state"].reshape(want.shape), want)


def test_a_cup_off_the_plates_centre_is_still_on_it(kitchen):
    """The built-in `on` reaches as far as the support's top face: a flat plate's radius, not its
    thickness (the smallest of its half extents), so a cup set down 3 cm off its centre is on it."""
    from demoforge.randomize.scene import bake_profiles
    from demoforge.scenes import build_task_scene
    from demoforge.symbolic.predicates import measure, on
    from demoforge.tasks import generate_family, parse_task

    generated = generate_family("cup_on_plate", count=1, seed=0)[0]
    task = parse_task(generated.problem_pddl, domain_text=kitchen.domain_text(), problem_file="p.pddl")
    scene, binding = build_task_scene(task, generated.scene, bake_profiles(generated.scene, 1, 0)[0])
    cup, plate = (n for n, t in sorted(task.objects, key=lambda o: o[1]) if t in ("cup", "plate"))
    model, data = scene.model, scene.data
    i, j = binding.blocks.index(cup), binding.blocks.index(plate)
    plate_pos = data.xpos[binding.body[j]].copy()
    for offset, expected in ((0.03, True), (0.09, False)):
        adr = int(model.jnt_qposadr[model.body_jntadr[binding.body[i]]])
        data.qpos[adr:adr + 3] = plate_pos + [offset, 0.0, binding.half[j][2] + binding.half[i][2] + 1e-4]
        data.qpos[adr + 3:adr + 7] = (1.0, 0.0, 0.0, 0.0)
        data.qvel[:] = 0.0
        mujoco.mj_forward(model, data)
        assert on(measure(model, data, binding), binding, cup, plate) is expected, offset


def test_the_look_sheet_shows_the_package_scene(isolated, tmp_path):
    """look-sheet takes --task-package and parses the family's problem with its package's domain
    (the blocks domain has no cup or bowl: it was the only one the sheet knew)."""
    import av

    args = ["look-sheet", "--family", "cup_in_bowl", "--look", "plain", "--draws", "1", "--columns", "1",
            "--cameras", "front", "--out", str(tmp_path / "k.png")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2 and "unknown task family 'cup_in_bowl'" in res.output and "--task-package" in res.output
    _cli("look-sheet", "--task-package", str(KITCHEN), *args[1:])
    with av.open(str(tmp_path / "k.png")) as png:
        img = next(png.decode(video=0)).to_ndarray(format="rgb24")
    assert img.shape == (224, 224, 3) and img.std() > 10
