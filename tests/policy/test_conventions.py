"""`--like BAKED` for every built-in policy, and actions never run at another rate or convention
than the one they were made in: refused up front, naming both, before anything is written."""

import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.policy import PolicySpaces


@pytest.fixture(scope="module")
def baked(expert_data, tmp_path_factory):
    """`expert_data` baked to joint_target at 15 Hz and to joint_pos at 30 Hz."""
    from demoforge.convert import BakeConfig, bake

    out = tmp_path_factory.mktemp("baked")
    return (bake([expert_data], out / "b15", BakeConfig(control_freq=15)),
            bake([expert_data], out / "b30", BakeConfig(control_freq=30, control_space="joint_pos")))


def _run(*argv):
    return CliRunner().invoke(app, [str(a) for a in argv])


def _specs(expert_data, b15, tmp_path):
    specs = ["expert", f"replay:{b15}", f"replay:{expert_data}", "tests.policy.scripted:hold"]
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return specs
    from tests.policy.test_rollout import tiny_onnx

    return [*specs, f"onnx:{tiny_onnx(tmp_path / 'tiny.onnx')}"]


def test_like_runs_every_builtin_policy_in_rollout_and_eval(pnp, expert_data, baked, tmp_path):
    b15, _ = baked
    solves = {"expert", f"replay:{b15}", f"replay:{expert_data}"}  # a hold or weak ONNX policy only has to run
    for k, spec in enumerate(_specs(expert_data, b15, tmp_path)):
        ticks = ["--max-ticks", "1200"] if spec in solves else ["--max-ticks", "16"]
        r = _run("rollout", "--policy", spec, "--problems", pnp, "--episodes", "2", "--envs", "2", *ticks,
                 "--like", b15, "--out", tmp_path / f"r{k}")
        assert r.exit_code == 0, (spec, r.output)
        assert ("2 episodes: success 1.000" if spec in solves else "2 episodes: success") in r.output, (spec, r.output)
        r = _run("eval", "--policy", spec, "--from-dataset", expert_data, "--envs", "2", *ticks, "--like", b15,
                 "--out", tmp_path / f"e{k}")
        assert r.exit_code == 0, (spec, r.output)
        assert ("2 episodes: success 1.000" if spec in solves else "2 episodes: success") in r.output, (spec, r.output)


class Trained:
    """A policy that says it was trained on a baked dataset (its labels' convention and rate)."""

    def __init__(self, dataset):
        from demoforge.gym import from_bake

        self.action_convention = from_bake(dataset)
        self.spaces = PolicySpaces({"observation.state": (8,)}, (8,))

    def reset(self, slot, start):
        pass

    def act(self, observations):
        raise AssertionError("never reached: the run is refused first")


def trained(dataset):
    return Trained(dataset)


def test_baked_actions_at_another_rate_or_convention_are_refused_naming_both(pnp, expert_data, baked, tmp_path):
    b15, b30 = baked
    cases = [  # (argv, what the message must name)
        (["rollout", "--policy", f"replay:{b15}", "--problems", pnp], ["joint_target actions at 15 Hz", "60 Hz",
                                                                      f"--like {b15}"]),
        (["eval", "--policy", f"replay:{b15}", "--from-dataset", expert_data], ["15 Hz", "60 Hz"]),
        (["rollout", "--policy", f"replay:{b15}", "--problems", pnp, "--like", b30],
         ["joint_target actions at 15 Hz", "joint_pos actions at 30 Hz"]),
        (["rollout", "--policy", "tests.policy.test_conventions:trained", "--policy-arg", f"dataset={b15}",
          "--problems", pnp], ["joint_target actions at 15 Hz", "60 Hz"]),
        (["eval", "--policy", "tests.policy.test_conventions:trained", "--policy-arg", f"dataset={b30}",
          "--from-dataset", expert_data, "--like", b15],
         ["joint_pos actions at 30 Hz", "joint_target actions at 15 Hz"]),
    ]
    for k, (argv, needles) in enumerate(cases):
        out = tmp_path / f"o{k}"
        r = _run(*argv, "--out", out)
        assert r.exit_code == 2, (argv, r.output)
        assert all(n in r.output for n in needles), (needles, r.output)
        assert not out.exists()
    ok = _run("rollout", "--policy", "tests.policy.test_conventions:trained", "--policy-arg", f"dataset={b15}",
              "--problems", pnp, "--like", b15, "--max-ticks", "1", "--out", tmp_path / "ok")
    assert ok.exit_code == 2 and "act() raised AssertionError: never reached" in ok.output  # run under its own
    assert not (tmp_path / "ok").exists()  # convention, its act raised: the user's error, nothing written


def test_a_raw_dataset_recorded_at_another_rate_is_refused(pnp, expert_data, tmp_path):
    from demoforge.policy import PolicyError, RolloutSettings, load_policy, rollout

    with pytest.raises(PolicyError, match=r"commands at 60 Hz .* ticks at 30 Hz"):
        rollout(load_policy(f"replay:{expert_data}"), [pnp], tmp_path / "r", episodes=1, spec="replay",
                settings=RolloutSettings(control_hz=30.0))
    assert not (tmp_path / "r").exists()
