"""`tasks gen --sidecar-material` writes contact materials into every generated sidecar (the key
`demoforge run` carries as tasks.sidecar_material, so its scenes stage bakes them into the
packages); block names are drawn per problem, so only `table` and `blocks` reach every one."""

import json

from typer.testing import CliRunner

from demoforge.cli.main import app


def test_tasks_gen_writes_materials_into_every_sidecar(tmp_path):
    res = CliRunner().invoke(app, ["tasks", "gen", "pnp", "--problems", "3", "--task-seed", "1", "--sidecar-material", "table=rubber",
                                   "--sidecar-material", "blocks=steel", "--out", str(tmp_path / "t")])
    assert res.exit_code == 0, res.output
    sidecars = sorted((tmp_path / "t").glob("*.scene.json"))
    assert len(sidecars) == 3
    assert all(json.loads(p.read_text())["materials"] == {"blocks": "steel", "table": "rubber"} for p in sidecars)
    plain = CliRunner().invoke(app, ["tasks", "gen", "pnp", "--problems", "3", "--task-seed", "1", "--out", str(tmp_path / "p")])
    assert plain.exit_code == 0 and "materials" not in (tmp_path / "p" / sidecars[0].name).read_text()


def test_a_bad_preset_or_a_block_name_is_refused_and_nothing_written(tmp_path):
    res = CliRunner().invoke(app, ["tasks", "gen", "pnp", "--problems", "2", "--task-seed", "1", "--sidecar-material", "table=rubbr",
                                   "--out", str(tmp_path / "a")])
    assert res.exit_code == 2 and "unknown material 'rubbr'" in res.output and "rubber" in res.output, res.output
    res = CliRunner().invoke(app, ["tasks", "gen", "pnp", "--problems", "2", "--task-seed", "1", "--sidecar-material", "red=rubber",
                                   "--out", str(tmp_path / "b")])
    assert res.exit_code == 2 and "materials.red: no such prop" in res.output and "`blocks`" in res.output, res.output
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_tasks_list_shows_each_operator_s_skill_and_each_predicate_s_evaluator():
    """`tasks list`: the installed domains with what acts out each operator and observes each
    predicate (static ones need no evaluator), and the families."""
    res = CliRunner().invoke(app, ["tasks", "list", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    blocks = out["domains"]["blocks"]
    assert blocks["operators"] == {op: True for op in ("flip", "pick-up", "place-in-region", "put-down", "rotate",
                                                       "stack", "unstack")}
    assert {p for p, how in blocks["predicates"].items() if how == "static"} == {"adjacent", "tip_yaw", "yaw_step"}
    assert "no evaluator" not in blocks["predicates"].values() and "pnp" in out["families"]
    text = CliRunner().invoke(app, ["tasks", "list"])
    assert text.exit_code == 0 and "operators: flip, pick-up" in text.output and "NO SKILL" not in text.output
