import json

from typer.testing import CliRunner

from demoforge.cli.main import app
from tests.convert._sources import write_raw

runner = CliRunner()


def test_cli_bakes_joint_vel_at_15hz(tmp_path):
    src = write_raw(tmp_path / "raw", lengths=(8,))
    out = tmp_path / "out"
    result = runner.invoke(app, ["bake", str(src), "--control-space", "joint_vel", "--control-freq", "15",
                                 "--cams", "front", "--task", "stack it", "--workers", "auto", "--crf", "28",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    stamp = json.loads((out / "meta/bake.json").read_text())
    assert (stamp["convention"], stamp["control_freq"], stamp["video"]["cameras"]) == (
        "joint_vel", 15, ["observation.images.front"])
    assert stamp["config"]["task"] == "stack it" and stamp["video"]["settings"]["crf"] == 28


def test_cli_reports_a_bad_rate_with_the_valid_ones(tmp_path):
    src = write_raw(tmp_path / "raw", lengths=(6,), cams=())
    result = runner.invoke(app, ["bake", str(src), "--control-freq", "7", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "valid rates are [60, 30, 20, 15, 12, 10" in result.output
