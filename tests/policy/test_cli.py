"""The policy commands through the `demoforge` app (its one error handler included)."""

import json

from typer.testing import CliRunner

from demoforge.cli.main import app


def test_rollout_replay_eval_relabel(pnp, expert_data, tmp_path):
    r = CliRunner().invoke(app, ["rollout", "--policy", "tests.policy.scripted:hold", "--problems", str(pnp),
                                 "--episodes", "2", "--envs", "2", "--out", str(tmp_path / "r"), "--max-ticks", "20",
                                 "--assist-floor", "0.5", "--assist-steps", "5"])
    assert r.exit_code == 0, r.output
    assert "[2/2] pnp-all-0000: truncated" in r.output
    assert "2 episodes: success 0.000" in r.output and "warm-up 5 ticks excluded" in r.output
    r = CliRunner().invoke(app, ["replay", str(tmp_path / "r" / "dataset"), "--json", str(tmp_path / "rep.json")])
    assert r.exit_code == 0, r.output
    assert "2/2 episodes replay within 1e-06; all bit-exact" in r.output
    assert json.loads((tmp_path / "rep.json").read_text())["exact"] is True
    r = CliRunner().invoke(app, ["eval", "--policy", f"replay:{expert_data}", "--from-dataset", str(expert_data),
                                 "--episodes", "1", "--out", str(tmp_path / "e"), "--max-ticks", "900"])
    assert r.exit_code == 0, r.output
    assert "1 episodes: success 1.000" in r.output
    r = CliRunner().invoke(app, ["relabel", "--rollouts", str(tmp_path / "r" / "dataset"),
                                 "--out", str(tmp_path / "l")])
    assert r.exit_code == 0, r.output
    assert "2 failed roll-outs: 2 relabeled" in r.output


def test_errors_exit_2_with_the_reason(pnp, tmp_path):
    r = CliRunner().invoke(app, ["rollout", "--policy", "tests.policy.scripted:wrong_width", "--problems", str(pnp),
                                 "--out", str(tmp_path / "r")])
    assert r.exit_code == 2 and "does not fit the env" in r.output
    r = CliRunner().invoke(app, ["rollout", "--policy", "tests.policy.scripted:hold", "--policy-arg", "n_arm=3",
                                 "--problems", str(pnp), "--out", str(tmp_path / "r2")])
    assert r.exit_code == 2 and "policy writes shape (4,), env takes (8,)" in r.output  # the argument arrived
    r = CliRunner().invoke(app, ["replay", str(tmp_path / "nothing")])
    assert r.exit_code == 2
    assert "--assist-floor" in CliRunner().invoke(app, ["rollout", "--help"]).output
