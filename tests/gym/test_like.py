"""`--like DATASET`: a policy acting in a baked dataset's convention and rate inside demoforge's own
roll-out, observing the same environment state the dataset holds."""

import json

import numpy as np
from typer.testing import CliRunner

from demoforge.dataset import open_dataset
from demoforge.policy import PolicySpaces, RolloutSettings, rollout
from demoforge.policy.like import like

ENV_STATE = "observation.environment_state"


class BakedReplay:
    """Plays the baked episode of the same (problem, episode), one action per decision; checks
    that its first observation is the baked first frame."""

    def __init__(self, root):
        self.reader = open_dataset(root)
        self.index = {(json.loads(r["demoforge/problem"]), json.loads(r["demoforge/seed"])["episode"]): r["episode_index"]
                      for r in self.reader.iter_episodes()}
        self.spaces = PolicySpaces({ENV_STATE: (20,), "observation.state": (8,)}, (8,))
        self.slots, self.firsts_matched = {}, 0

    def reset(self, slot, start):
        ep = self.reader.read_episode(self.index[(start.problem.name, start.episode)])
        self.slots[slot] = [ep, 0]

    def act(self, obs):
        out = np.zeros((len(obs[ENV_STATE]), 8))
        for i, slot in self.slots.items():
            if not np.isfinite(obs[ENV_STATE][i]).all():
                continue
            ep, t = slot
            if t == 0:
                np.testing.assert_allclose(obs[ENV_STATE][i], ep[ENV_STATE][0], atol=1e-6)
                self.firsts_matched += 1
            out[i] = ep["action"][min(t, len(ep["action"]) - 1)]
            slot[1] = t + 1
        return out


def _problems(family_run):
    return sorted(p for p in family_run.parent.glob("pnp-*.pddl"))


def test_a_policy_acts_in_the_baked_convention_inside_demoforge_rollout(family_run, family_baked, tmp_path):
    inner = BakedReplay(family_baked)
    summary = rollout(like(inner, family_baked), _problems(family_run), tmp_path / "r", episodes=2, envs=2, seed=0,
                      settings=RolloutSettings(max_ticks=1200))  # the longest demo runs 936 native ticks
    assert summary["overall"]["success_rate"] == 1.0 and summary["overall"]["mean_completion"] == 1.0
    assert inner.firsts_matched == 4


def test_rollout_cli_takes_like(family_run, family_baked, tmp_path, monkeypatch):
    import typer

    from demoforge.cli import policy as cli
    from demoforge.cli.failures import DemoforgeGroup

    app = typer.Typer(cls=DemoforgeGroup)  # the group's one error handler, as `demoforge` has
    app.command("rollout")(cli.rollout)
    app.command("eval")(cli.eval_)
    monkeypatch.setattr("demoforge.policy.adapters._entry_point", lambda spec, kw: BakedReplay(family_baked))
    args = ["--policy", "x:y", "--problems", str(_problems(family_run)[0]), "--episodes", "2", "--max-ticks", "1200", "--like",
            str(family_baked)]
    r = CliRunner().invoke(app, ["rollout", *args, "--out", str(tmp_path / "r")])
    assert r.exit_code == 0, r.output
    assert "2 episodes: success 1.000" in r.output
    (tmp_path / "plain").mkdir()  # not a baked dataset (and not holding OUT: that is refused first)
    r = CliRunner().invoke(app, ["rollout", *args[:-1], str(tmp_path / "plain"), "--out", str(tmp_path / "s")])
    assert r.exit_code == 2 and "meta/bake.json" in r.output
