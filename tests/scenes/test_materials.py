"""Materials by name: the sidecar's `materials`, their resolution into the built model, and the
run's PROP=MATERIAL entries."""

import dataclasses
import json

import numpy as np
import pytest

from demoforge.errors import TaskError
from demoforge.randomize.scene import sample_scene
from demoforge.scenes import SceneBuildError, build_task_scene, model_fingerprint
from demoforge.scenes.materials import (
    MaterialError,
    materials_to_args,
    parse_material_args,
    scene_materials,
    with_materials,
)
from demoforge.sim import MATERIALS
from demoforge.tasks import generate_family, scene_from_json, scene_to_json
from demoforge.tasks.library import domain_text
from demoforge.tasks.parse import parse_task
from demoforge.tasks.scene import CustomMaterial

# model_fingerprint of each family's problem (seed 3) under the draw of default_rng(5), computed at
# 73b0da5, before materials had names: a sidecar without `materials` must keep building this model.
GOLDEN = {"pnp": "9759e7ff70875078d03eec1832b282832c347b357174b24313601b4da6a0f36d",
          "stack_three": "51a4891ad2e53ea1b5e5a956fd5910ecd926e9fb0049254d1ff85be2e6a4a6a3"}
STEEL_ISH = CustomMaterial((0.004, 1.0), (0.95, 0.99, 0.001, 0.5, 2.0), (0.5, 0.005, 0.0001), 7850.0, name="my-steel")


def _problem(family: str):
    t = generate_family(family, count=1, seed=3)[0]
    return parse_task(t.problem_pddl, domain_text=domain_text("blocks")), t.scene


def _built(family: str, materials=()):
    task, params = _problem(family)
    params = dataclasses.replace(params, materials=tuple(sorted(materials)))
    draw = sample_scene(params, np.random.default_rng(5))
    scene, _ = build_task_scene(task, params, draw)
    return scene, params, draw


@pytest.mark.parametrize("family", sorted(GOLDEN))
def test_a_sidecar_without_materials_builds_the_model_it_built_before(family):
    scene, params, _ = _built(family)
    assert model_fingerprint(scene.model) == GOLDEN[family]
    text = scene_to_json(params)
    assert "materials" not in json.loads(text)  # written back as before, byte for byte
    assert scene_to_json(scene_from_json(text)) == text


def test_table_rubber_changes_the_table_and_nothing_else():
    wood, params, draw = _built("stack_three")
    rubber, _, _ = _built("stack_three", [("table", "rubber")])
    top = rubber.model.geom("table_top").id
    np.testing.assert_array_equal(rubber.model.geom_friction[top], MATERIALS["rubber"].friction)
    np.testing.assert_array_equal(rubber.model.geom_solref[top], MATERIALS["rubber"].solref)
    assert wood.model.geom_friction[top][0] == pytest.approx(draw.friction)  # unnamed: the drawn friction
    for block, _ in params.blocks:  # blocks keep the drawn wood
        g = rubber.model.geom(block).id
        np.testing.assert_array_equal(rubber.model.geom_friction[g], wood.model.geom_friction[g])
        assert rubber.model.body_mass[rubber.model.body(block).id] == wood.model.body_mass[wood.model.body(block).id]


def test_a_blocks_entry_covers_every_block_a_block_entry_wins():
    _, params, _ = _built("stack_three")
    first, *rest = [b for b, _ in params.blocks]
    scene, _, draw = _built("stack_three", [("blocks", "steel"), (first, "foam")])
    m = scene.model
    size = dict(draw.block_size_m)
    for b in rest:
        assert m.body_mass[m.body(b).id] == pytest.approx(MATERIALS["steel"].density * size[b] ** 3)
        np.testing.assert_array_equal(m.geom_solimp[m.geom(b).id], MATERIALS["steel"].solimp)
    assert m.body_mass[m.body(first).id] == pytest.approx(MATERIALS["foam"].density * size[first] ** 3)


def test_a_custom_material_builds_with_its_numbers_and_round_trips_through_the_sidecar():
    scene, params, _ = _built("pnp", [("table", STEEL_ISH)])
    top = scene.model.geom("table_top").id
    np.testing.assert_array_equal(scene.model.geom_solimp[top], STEEL_ISH.solimp)
    text = scene_to_json(params)
    assert json.loads(text)["materials"]["table"]["name"] == "my-steel"
    back = scene_from_json(text)
    assert back.materials == params.materials and scene_to_json(back) == text


def test_an_unknown_preset_lists_the_presets_and_an_unknown_prop_lists_the_props():
    _, params, _ = _built("pnp")
    draw = sample_scene(params, np.random.default_rng(0))
    with pytest.raises(MaterialError) as bad:
        scene_materials(dataclasses.replace(params, materials=(("table", "rubbr"),)), draw, timestep=1 / 600)
    assert "'rubbr'" in str(bad.value) and ", ".join(sorted(MATERIALS)) in str(bad.value)
    text = json.loads(scene_to_json(params))
    text["materials"] = {"tabel": "rubber"}
    with pytest.raises(TaskError) as bad:
        scene_from_json(json.dumps(text), file="x.scene.json")
    block = params.blocks[0][0]
    assert "x.scene.json" in str(bad.value)
    assert f"materials.tabel: no such prop; props: table, blocks, {block}" in str(bad.value)


def test_a_custom_material_too_stiff_for_the_timestep_is_refused_with_the_fix():
    task, params = _problem("pnp")
    fast = dataclasses.replace(STEEL_ISH, solref=(0.002, 1.0))
    params = dataclasses.replace(params, materials=(("table", fast),))
    with pytest.raises(SceneBuildError) as bad:
        build_task_scene(task, params, sample_scene(params, np.random.default_rng(0)))
    assert "materials.table.solref timeconst 0.002 s is below 2 x timestep" in str(bad.value)
    assert "use timeconst >= 0.00333333" in str(bad.value)


def test_a_malformed_custom_material_reports_every_problem_at_once():
    _, params = _problem("pnp")
    data = json.loads(scene_to_json(params))
    data["materials"] = {"table": {"solref": [0.01], "friction": [1, 0, 0], "density": 1, "colour": "red"},
                         "blocks": {"solref": [0.01, 1], "solimp": [0.9, 0.95, 0.001, 0.5, 2],
                                    "friction": [1, 0, "x"], "density": 1}}
    with pytest.raises(TaskError) as bad:
        scene_from_json(json.dumps(data), file="s.json")
    text = str(bad.value)
    assert "materials.table: missing key 'solimp'" in text and "unknown key 'colour'" in text
    assert "materials.blocks.friction" in text


def test_material_args_parse_presets_and_json_whatever_the_comma_split():
    custom = '{"solref": [0.004, 1.0], "solimp": [0.95, 0.99, 0.001, 0.5, 2.0], "friction": [0.5, 0.005, 0.0001], ' \
             '"density": 7850}'
    # a list option splits its text at commas: the JSON arrives in pieces
    pieces = tuple(p.strip() for p in f"table=rubber,red={custom}".split(","))
    parsed = parse_material_args(pieces)
    assert parsed["table"] == "rubber" and parsed["red"].solimp == (0.95, 0.99, 0.001, 0.5, 2.0)
    assert parse_material_args(tuple(x for a in materials_to_args(parsed) for x in a.split(","))) == parsed
    for bad, said in ((("table",), "give PROP=MATERIAL"), (("table=wood", "table=steel"), "given twice"),
                      (("red={nope",), "is not a JSON object")):
        with pytest.raises(MaterialError, match=said):
            parse_material_args(bad)


def test_run_materials_lay_over_the_sidecars():
    _, params = _problem("stack_three")
    a, b, c = [n for n, _ in params.blocks]
    own = dataclasses.replace(params, materials=(("table", "foam"), (a, "steel")))
    assert dict(with_materials(own, {"table": "rubber"}).materials) == {"table": "rubber", a: "steel"}
    assert dict(with_materials(own, {"blocks": "plastic"}).materials) == {"table": "foam", "blocks": "plastic"}
    assert dict(with_materials(own, {"blocks": "plastic", b: "wood"}).materials) == {
        "table": "foam", "blocks": "plastic", b: "wood"}
    assert with_materials(own, {}) is own


def test_a_scene_package_bakes_its_sidecars_materials(tmp_path):
    from demoforge.scenes import build_scene_package, load_scene_package, open_profile
    from demoforge.tasks import write_tasks

    t = generate_family("pnp", count=1, seed=3)[0]
    t = dataclasses.replace(t, scene=dataclasses.replace(t.scene, materials=(("table", "rubber"),)))
    pddl = [p for p in write_tasks([t], tmp_path / "t") if p.suffix == ".pddl" and p.name != "blocks.pddl"]
    build_scene_package(pddl, reset_states=1, profiles=1, seed=0, out=tmp_path / "pkg")
    (problem,) = load_scene_package(tmp_path / "pkg").problems
    assert json.loads((tmp_path / "pkg" / problem.entry.name / "scene.json").read_text())["materials"] == {
        "table": "rubber"}
    scene, _ = open_profile(problem, 0)  # rebuilt from the copied sidecar: the fingerprint matches
    np.testing.assert_array_equal(scene.model.geom_friction[scene.model.geom("table_top").id],
                                  MATERIALS["rubber"].friction)
