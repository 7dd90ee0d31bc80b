"""`demoforge run` as a command and the demo function."""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.dataset import check_dataset

ALL = [f"--skip-{s}" for s in ("tasks", "scenes", "execute", "render", "merge", "annotate", "bake", "doctor")]


def test_cli_maps_flags_onto_the_saved_config(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("problems: 3\nseed: 4\n")
    res = CliRunner().invoke(app, ["run", "--experiment-id", "a", "--out-dir", str(tmp_path), "--config", str(cfg),
                                   "--seed", "9", "--look", "plain", "--look", "randomized:2",
                                   "--control-space", "joint_target", *ALL])
    assert res.exit_code == 0, res.output
    saved = yaml.safe_load((tmp_path / "a" / "config.yaml").read_text())
    assert (saved["tasks"]["problems"], saved["seed"], saved["render"]["looks"]) == (3, 9, ["plain", "randomized:2"])
    assert saved["bake"]["control_space"] == "joint_target" and len(saved["skip"]) == 8


def test_cli_robot_start_flags_land_in_the_saved_config(tmp_path):
    spec = tmp_path / "start.yaml"
    spec.write_text("p_closed: 1.0\n")
    res = CliRunner().invoke(app, ["run", "--experiment-id", "a", "--out-dir", str(tmp_path), "--robot-start-spec",
                                   str(spec), *ALL])
    assert res.exit_code == 0, res.output
    saved = yaml.safe_load((tmp_path / "a" / "config.yaml").read_text())
    assert saved["robot_start"]["p_closed"] == 1.0 and saved["robot_start"]["tcp_z_m"] == [0.25, 0.4]
    res = CliRunner().invoke(app, ["run", "--experiment-id", "b", "--out-dir", str(tmp_path), "--robot-start", *ALL])
    assert res.exit_code == 0 and yaml.safe_load((tmp_path / "b/config.yaml").read_text())["robot_start"]["p_closed"] == 0.5
    spec.write_text("p_closed: 2\n")
    res = CliRunner().invoke(app, ["run", "--experiment-id", "c", "--out-dir", str(tmp_path), "--robot-start-spec",
                                   str(spec), *ALL])
    assert res.exit_code == 2 and "p_closed: 2 must be a probability in [0, 1]" in res.output


def test_skip_envs_is_the_deprecated_name_of_skip_scenes(tmp_path):
    old = [s for s in ALL if s != "--skip-scenes"] + ["--skip-envs"]
    res = CliRunner().invoke(app, ["run", "--experiment-id", "a", "--out-dir", str(tmp_path), *old])
    assert res.exit_code == 0, res.output
    assert res.stderr.startswith("note: --skip-envs is read as --skip-scenes;") and res.stderr.count("note:") == 1
    assert "scenes" in yaml.safe_load((tmp_path / "a" / "config.yaml").read_text())["skip"]


def test_cli_refuses_unknown_keys_with_exit_2(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("episodes: 3\n")
    res = CliRunner().invoke(app, ["run", "--experiment-id", "a", "--out-dir", str(tmp_path), "--config", str(cfg)])
    assert res.exit_code == 2 and "unknown key 'episodes'" in res.output


def test_a_stage_with_nothing_to_do_says_so_and_which_option_would_run_it(tmp_path):
    only = ["--skip-tasks", "--skip-scenes", "--skip-execute", "--skip-merge", "--skip-annotate", "--skip-doctor"]
    res = CliRunner().invoke(app, ["run", "--experiment-id", "a", "--out-dir", str(tmp_path), *only])
    assert res.exit_code == 0, res.output
    assert "render: nothing to do: no looks (render.looks; --look LOOK renders)" in res.output
    assert "bake: nothing to do: no control_space (bake.control_space; --control-space NAME bakes)" in res.output
    assert "done in" not in res.output and not (tmp_path / "a" / "baked").exists()


@pytest.mark.slow
def test_demo_runs_and_prints_dataset_and_doctor(tmp_path):
    from demoforge.pipeline.demo import run_demo

    lines: list[str] = []
    result = run_demo(tmp_path, echo=lines.append)
    assert check_dataset(result.final) == [] and result.final.name == "baked"
    assert f"dataset: {result.final.resolve()}" in lines
    assert any(line.startswith("doctor: ") for line in lines)
    from demoforge.doctor import run_doctor

    # tabletop work never needs most of the elbow's range: D007 notes that, it does not warn
    d007 = [f for f in run_doctor(result.final, checks=["D007"]).findings if f.severity != "info"]
    assert d007 == [], [str(f) for f in d007]
    again = run_demo(tmp_path, echo=lines.append)  # an earlier demo is replaced
    assert again.ran == result.ran
