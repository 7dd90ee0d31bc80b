"""`demoforge export openpi|gr00t SRC --out DIR`: exit 0 with the files named; bad input exits 2 with the fix."""

import json

from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.convert import BakeConfig, bake
from tests.convert._sources import write_raw

runner = CliRunner()


def test_cli_exports_for_both_trainers_and_refuses_bad_input(tmp_path):
    raw = write_raw(tmp_path / "raw", lengths=(12,))
    baked = bake([raw], tmp_path / "baked", BakeConfig(control_space="joint_target", control_freq=30))
    for trainer, horizon, stamp_field in (("openpi", "3", "norm_stats"), ("gr00t", "2", "modality")):
        out = tmp_path / trainer
        result = runner.invoke(app, ["export", trainer, str(baked), "--out", str(out), "--action-horizon", horizon,
                                     "--repo-id", "demo/stack"])
        assert result.exit_code == 0, result.output
        assert f"for {trainer} into {out}" in result.output and "LeRobot v2.1" in result.output
        stamp = json.loads((out / "meta/demoforge/export.json").read_text())
        assert stamp["action_horizon"] == int(horizon) and stamp_field in stamp
    assert json.loads((tmp_path / "openpi/meta/demoforge/export.json").read_text())["repo_id"] == "demo/stack"

    result = runner.invoke(app, ["export", "rlds", str(baked), "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "trainer 'rlds' is unknown; choose one of ['gr00t', 'openpi']" in result.output
    result = runner.invoke(app, ["export", "openpi", str(raw), "--out", str(tmp_path / "y")])
    assert result.exit_code == 2 and "bake it first: demoforge bake" in result.output
    result = runner.invoke(app, ["export", "gr00t", str(baked), "--out", str(tmp_path / "z"), "--action-horizon", "0"])
    assert result.exit_code == 2 and "--action-horizon" in result.output
    result = runner.invoke(app, ["export", "gr00t", str(baked), "--out", str(tmp_path / "z"), "--workers", "0"])
    assert result.exit_code == 2 and "workers (--workers): 0 must be an integer in [1, 512] or 'auto'" in result.output
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists() and not (tmp_path / "z").exists()
    result = runner.invoke(app, ["export", "gr00t", str(baked), "--out", str(tmp_path / "auto"), "--workers", "auto",
                                 "--action-horizon", "2"])
    assert result.exit_code == 0, result.output


def test_export_reports_progress_off_a_terminal_and_not_when_quiet(tmp_path):
    raw = write_raw(tmp_path / "raw", lengths=(12, 14))
    baked = bake([raw], tmp_path / "baked", BakeConfig(control_space="joint_target", control_freq=30))
    loud = runner.invoke(app, ["export", "openpi", str(baked), "--out", str(tmp_path / "a")])
    assert loud.exit_code == 0, loud.output
    assert "export: 2/2 episodes" in loud.stderr and "took" in loud.stderr
    quiet = runner.invoke(app, ["export", "gr00t", str(baked), "--out", str(tmp_path / "b"), "--action-horizon", "2",
                                "--quiet"])
    assert quiet.exit_code == 0, quiet.output
    assert "export:" not in quiet.stderr
