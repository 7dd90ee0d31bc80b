"""`demoforge tasks ...` through typer's test runner."""

from typer.testing import CliRunner

from demoforge.cli.main import app

runner = CliRunner()


def _gen(out, *extra):
    return runner.invoke(app, ["tasks", "gen", "pnp", "--problems", "3", "--task-seed", "7", "--out", str(out), *extra])


def test_gen_writes_problems_sidecars_and_domain_byte_identically(tmp_path):
    extra = ["--distractors", "2", "--split", "test", "--placement-x", "-0.2,-0.05;0.05,0.2", "--friction", "0.4,0.8"]
    assert _gen(tmp_path / "a", *extra).exit_code == 0
    assert _gen(tmp_path / "b", *extra).exit_code == 0
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == ["blocks.pddl", "pnp-test-0000.pddl", "pnp-test-0000.scene.json", "pnp-test-0001.pddl",
                     "pnp-test-0001.scene.json", "pnp-test-0002.pddl", "pnp-test-0002.scene.json"]
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    sidecar = (tmp_path / "a" / "pnp-test-0000.scene.json").read_text()
    assert '"friction": [0.4, 0.8]' in sidecar and "[-0.2, -0.05]" in sidecar


def test_unknown_family_lists_families(tmp_path):
    result = runner.invoke(app, ["tasks", "gen", "towers", "--problems", "1", "--task-seed", "0", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert ("family (--family): unknown task family 'towers'; families: flip, pnp, rotate, stack_n, stack_three, "
            "unstack" in result.output and "--task-package" in result.output)


def test_bad_option_value_is_named(tmp_path):
    result = _gen(tmp_path, "--block-size", "0.05")
    assert result.exit_code == 2 and "--block-size" in result.output


def test_check_and_plan(tmp_path):
    assert _gen(tmp_path).exit_code == 0
    problem = tmp_path / "pnp-all-0001.pddl"
    result = runner.invoke(app, ["tasks", "check", str(problem), "--domain", str(tmp_path / "blocks.pddl")])
    assert result.exit_code == 0 and result.output.startswith("OK ")
    result = runner.invoke(app, ["tasks", "plan", str(problem)])
    assert result.exit_code == 0 and "solved by pymimir" in result.output and "(place-in-region" in result.output
    broken = tmp_path / "broken.pddl"
    broken.write_text(problem.read_text().replace("(hand_empty)", "(hand_emptyy)"))
    result = runner.invoke(app, ["tasks", "check", str(problem), str(broken)])
    assert result.exit_code == 1 and "unknown predicate 'hand_emptyy'" in result.output


def test_families_lists_every_family():
    result = runner.invoke(app, ["tasks", "families"])
    assert result.exit_code == 0 and [line.split()[0] for line in result.output.splitlines()] == [
        "flip", "pnp", "rotate", "stack_n", "stack_three", "unstack"]
