"""The policy commands' config records (`policy.config`): their flags, and the checks a record
makes across its fields before anything is written."""

from __future__ import annotations

import typer.main
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.fields import build, collect, parse_text, specs
from demoforge.policy.config import EvalConfig, PolicyLoop, RolloutConfig

# The flags each command had when its options were hand-written typer.Options: the records keep them
# (a bool field adds its --no- form); since then, --task-package on every command that rebuilds a
# recorded scene, which may hold a task package's objects.
PKG = {"--task-package"}
LOOP = {"--policy", "--policy-arg", "--envs", "--max-ticks", "--warmup", "--reference-ticks", "--assist-floor",
        "--assist-steps", "--like", "--image-size", "--workers", "--robot", "--look", "--seed", "--out"} | PKG
FLAGS = {
    "rollout": LOOP | {"--problems", "--episodes", "--domain", "--randomization", "--output-format"},
    "eval": LOOP | {"--from-dataset", "--episodes", "--start"},
    "relabel": {"--rollouts", "--out", "--envs", "--workers"} | PKG,
    "replay": {"--episodes", "--kinematic", "--no-kinematic", "--tol", "--json"} | PKG,
    "viz": {"--out", "--episodes", "--cameras", "--kinds", "--width", "--height", "--stride", "--quiet"} | PKG,
    "plot": {"--episode", "--out"} | PKG,
}


def _flags(name: str) -> set[str]:
    cmd = typer.main.get_command(app).commands[name]
    return {opt for p in cmd.params for opt in (*p.opts, *p.secondary_opts) if opt.startswith("-")}


def test_each_policy_command_keeps_its_flags():
    for name, flags in FLAGS.items():
        assert _flags(name) == flags, name
        assert all(flag in CliRunner().invoke(app, [name, "--help"], terminal_width=200).output for flag in flags)


def test_a_warm_up_as_long_as_the_horizon_exits_2_naming_warmup_before_anything_is_written(tmp_path):
    problem = tmp_path / "p.pddl"  # never read: the options are refused first
    for argv in (["rollout", "--problems", str(problem)], ["eval", "--from-dataset", str(tmp_path)]):
        r = CliRunner().invoke(app, [*argv, "--policy", "expert", "--warmup", "1200", "--max-ticks", "1200",
                                     "--out", str(tmp_path / "out")])
        assert r.exit_code == 2 and "warmup (--warmup): 1200 ticks excluded" in r.output, r.output
        assert "lower --warmup or raise --max-ticks" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "out").exists()
    assert PolicyLoop(warmup=5, reference_ticks=6).refusals() == []
    assert "--assist-steps" in PolicyLoop(assist_floor=0.5, assist_steps=10, max_ticks=10).refusals()[0]
    off = PolicyLoop(assist_steps=10, max_ticks=100).refusals()  # steps of an assist that is off: not ignored
    assert len(off) == 1 and "--assist-steps" in off[0] and "--assist-floor" in off[0]


def test_every_problem_of_the_options_is_reported_at_once(tmp_path):
    base = ["eval", "--policy", "expert", "--from-dataset", str(tmp_path), "--out", str(tmp_path / "out")]
    r = CliRunner().invoke(app, [*base, "--envs", "0", "--seed", "-1", "--episodes", "3-1"])
    assert r.exit_code == 2
    assert all(s in r.output for s in ("envs (--envs)", "seed (--seed)", "episodes (--episodes)")), r.output
    r = CliRunner().invoke(app, [*base, "--start", "middle", "--warmup", "1200"])  # the record's own checks
    assert r.exit_code == 2 and "'middle' is not a start" in r.output and "warmup (--warmup)" in r.output


def test_policy_args_keep_the_commas_of_their_yaml_values():
    field = {s.name: s for s in specs(RolloutConfig)}["policy_arg"]
    items = parse_text(field, ["sizes=[1,2]", "name=x,chunk=4"])
    assert items == ("sizes=[1,2]", "name=x", "chunk=4")
    values, problems = collect(RolloutConfig, {"policy_arg": items})
    assert not problems
    assert build(RolloutConfig, values).loop.factory_kwargs() == {"sizes": [1, 2], "name": "x", "chunk": 4}
    _, problems = collect(RolloutConfig, {"policy_arg": ("not an arg", "k=[1,")})
    assert len(problems) == 1 and "'not an arg': expected KEY=VALUE" in problems[0] and "is not YAML" in problems[0]


def test_the_records_give_the_library_its_arguments():
    config = EvalConfig(loop=PolicyLoop(policy="expert", max_ticks=300, warmup=10, assist_floor=0.2, assist_steps=20),
                        start="first,every:50")
    settings = config.loop.settings()
    assert (settings.max_ticks, settings.warmup, settings.horizon, settings.assist.floor) == (300, 20, 300, 0.2)
    assert [s.label for s in config.starts()] == ["first", "every:50"]
    assert RolloutConfig().eval_look() is None and RolloutConfig().randomization_spec() is None
