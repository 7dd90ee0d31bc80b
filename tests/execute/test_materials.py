"""generate --material: the named materials reach the built model and the recorded episodes, are
recorded in run.json, are contact-linted before any episode, and bad ones are refused by name."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.dataset import open_dataset
from demoforge.execute import ExecuteError, generate
from demoforge.replay import episode_scene
from demoforge.sim import MATERIALS, Material

from .test_generate import _outputs
from .test_expert_loop import _replays_exactly

STEEL_ISH = {"solref": [0.004, 1.0], "solimp": [0.95, 0.99, 0.001, 0.5, 2.0], "friction": [0.7, 0.005, 0.0001],
             "density": 7000.0}
BOUNCY = {**STEEL_ISH, "solref": [2 / 600, 1e-3]}  # at the timestep floor and nearly undamped: explodes


def _table_friction(scene) -> np.ndarray:
    return scene.model.geom_friction[scene.model.geom("table_top").id]


def test_material_table_rubber_reaches_the_model_the_recorded_episode_and_run_json(pnp, tmp_path):
    args = ["generate", str(pnp[0]), "--episodes-per-problem", "1", "--seed", "2"]
    res = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "rubber"), "--material", "table=rubber"])
    assert res.exit_code == 0, res.output
    plain = generate(pnp[:1], tmp_path / "plain", episodes_per_problem=1, seed=2)
    root = tmp_path / "rubber/success"
    np.testing.assert_array_equal(_table_friction(episode_scene(root, 0)), MATERIALS["rubber"].friction)
    assert _table_friction(episode_scene(plain.roots["success"], 0))[0] != MATERIALS["rubber"].friction[0]
    _replays_exactly(root, 0)  # the recorded states were stepped in the rubber-topped model
    name = json.loads(open_dataset(root).episode(0)["demoforge/problem"])
    sidecar = json.loads((root / f"meta/demoforge/scenes/{name}.json").read_text())["scene_sidecar"]
    assert sidecar["materials"] == {"table": "rubber"}
    assert json.loads((tmp_path / "rubber/run.json").read_text())["materials"] == {"table": "rubber"}
    assert "materials" not in json.loads((tmp_path / "plain/run.json").read_text())
    other = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "rubber"), "--material", "table=steel"])
    assert other.exit_code == 2 and "differing: materials" in other.output  # another material: another run


def test_without_materials_a_run_is_what_it_was(pnp, tmp_path):
    generate(pnp[:1], tmp_path / "a", episodes_per_problem=1, seed=5)
    generate(pnp[:1], tmp_path / "b", episodes_per_problem=1, seed=5, materials={})
    assert _outputs(tmp_path / "a") == _outputs(tmp_path / "b")
    assert (tmp_path / "a/run.json").read_text() == (tmp_path / "b/run.json").read_text().replace(
        str(tmp_path / "b"), str(tmp_path / "a"))


@pytest.mark.slow
def test_materials_are_byte_identical_for_any_worker_and_env_count(pnp, tmp_path):
    materials = {"table": "rubber", "blocks": STEEL_ISH}
    generate(pnp, tmp_path / "a", episodes_per_problem=2, envs=1, workers=1, seed=4, materials=materials)
    generate(pnp, tmp_path / "b", episodes_per_problem=2, envs=3, workers=2, seed=4, materials=materials)
    assert _outputs(tmp_path / "a") == _outputs(tmp_path / "b")


def test_a_bad_material_name_lists_the_presets_and_a_bad_prop_lists_the_props(pnp, tmp_path):
    base = ["generate", str(pnp[0]), "--episodes-per-problem", "1", "--out", str(tmp_path / "run")]
    bad = CliRunner().invoke(app, [*base, "--material", "table=rubbr"])
    assert bad.exit_code == 2 and "unknown material 'rubbr'" in bad.output
    assert "presets: foam, plastic, rubber, steel, wood" in bad.output
    block = json.loads(pnp[0].with_name(pnp[0].stem + ".scene.json").read_text())["blocks"]
    bad = CliRunner().invoke(app, [*base, "--material", "tabel=rubber"])
    assert bad.exit_code == 2 and "no problem of the run has a prop 'tabel'" in bad.output
    assert f"props: blocks, table, {', '.join(sorted(block))}" in bad.output
    bad = CliRunner().invoke(app, [*base, "--material", "table"])
    assert bad.exit_code == 2 and "material (--material)" in bad.output and "PROP=MATERIAL" in bad.output
    assert not (tmp_path / "run").exists()


def test_an_exploding_material_is_refused_before_any_episode_and_a_sound_one_runs(pnp, tmp_path):
    with pytest.raises(ExecuteError) as bad:
        generate(pnp[:1], tmp_path / "run", episodes_per_problem=1, materials={"table": BOUNCY, "blocks": BOUNCY})
    text = str(bad.value)
    assert "on the table top" in text and "C001 explosion" in text and "solref [0.0033333333333333335, 0.001]" in text
    assert "fix:" in text and "dampratio" in text
    assert not (tmp_path / "run").exists()  # nothing blocks the corrected rerun
    too_stiff = {**STEEL_ISH, "solref": [0.002, 1.0]}
    with pytest.raises(ExecuteError, match=r"--material table.solref timeconst 0.002 s is below 2 x timestep"):
        generate(pnp[:1], tmp_path / "run", episodes_per_problem=1, materials={"table": too_stiff})
    alu = Material("alu", (0.004, 1.0), (0.95, 0.99, 0.001, 0.5, 2.0), (0.6, 0.005, 0.0001), 2700.0)
    summary = generate(pnp[:1], tmp_path / "run", episodes_per_problem=1, materials={"table": BOUNCY | {
        "solref": [0.004, 1.0]}, "blocks": alu})  # the corrected rerun, into the same folder
    assert summary.episodes == 1
    scene = episode_scene(tmp_path / "run" / ("success" if summary.successes else "failure"), 0)
    np.testing.assert_array_equal(_table_friction(scene), STEEL_ISH["friction"])
    recorded = json.loads((tmp_path / "run/run.json").read_text())["materials"]
    assert recorded["blocks"]["name"] == "alu" and recorded["blocks"]["density"] == 2700.0


def test_lint_warnings_are_passed_on_and_do_not_stop_the_run(pnp, tmp_path):
    said = []
    generate(pnp[:1], tmp_path / "run", episodes_per_problem=1, materials={"table": "foam", "blocks": "foam"},
             warn=said.append)
    assert said and all(s.startswith("warning: contact lint: ") for s in said)
    assert any("C002 penetration" in s and "on the table top (foam" in s for s in said), said


def test_a_scene_package_refuses_materials(pnp, tmp_path):
    from demoforge.scenes import build_scene_package

    build_scene_package(pnp[:1], reset_states=1, profiles=1, seed=0, out=tmp_path / "pkg")
    with pytest.raises(ExecuteError, match="scenes are baked with their sidecars' materials"):
        generate([tmp_path / "pkg"], tmp_path / "run", episodes_per_problem=1, materials={"table": "rubber"})


def test_the_run_config_key_reaches_generate(pnp):
    from demoforge.pipeline.execution import generate_options
    from demoforge.pipeline.config import config_from_dict

    config = config_from_dict({"experiment_id": "m", "execute": {"material": ["blocks=steel", "table=rubber"]}})
    assert generate_options(config, [str(pnp[0])])["materials"] == {"blocks": "steel", "table": "rubber"}
    with pytest.raises(Exception, match="unknown material 'rubbr'"):
        config_from_dict({"experiment_id": "m", "execute": {"material": ["table=rubbr"]}})
