"""`environment_state="goal"`: only the regions the goal names, for a policy that sees the objects
in its cameras; baked and observed alike, and refused where the goal names no region."""

import json

import numpy as np
import pytest

from demoforge.convert import BakeConfig, bake
from demoforge.dataset import open_dataset
from demoforge.errors import DemoforgeError
from demoforge.gym import FamilyEnv, FamilyEnvConfig, environment_state_kind, from_bake
from demoforge.replay import EPISODE_MODELS


@pytest.fixture(scope="module")
def goal_baked(family_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("goal") / "pnp"
    return bake([family_run], out, BakeConfig(control_freq=15, environment_state=True, environment_state_kind="goal"),
                models=EPISODE_MODELS)


def test_the_goal_state_is_the_target_region_and_nothing_of_the_block(goal_baked, family_baked):
    goal, full = open_dataset(goal_baked), open_dataset(family_baked)
    assert goal.info.features["observation.environment_state"].shape == (10,)
    assert environment_state_kind(goal_baked) == "goal" and environment_state_kind(family_baked) == "objects"
    for k in goal.episode_indices:
        g = goal.read_episode(k, ["observation.environment_state"])["observation.environment_state"]
        f = full.read_episode(k, ["observation.environment_state"])["observation.environment_state"]
        np.testing.assert_array_equal(g, f[:, 10:20])  # object 1 of the full state: pnp's target region
        assert np.ptp(g[:, :7], axis=0).max() == 0.0  # a region never moves; only its offset from the TCP does
        assert json.loads(goal.episode(k)["demoforge/environment_objects"]) == \
            json.loads(full.episode(k)["demoforge/environment_objects"])[1:]


def test_the_env_observes_what_bake_wrote(goal_baked):
    env = FamilyEnv(FamilyEnvConfig(task="pnp", split="train", problems=2, episodes=2, action=from_bake(goal_baked),
                                    environment_state="goal"))
    assert env.shapes()["environment_state"] == (10,)
    reader = open_dataset(goal_baked)
    starts = {(json.loads(r["demoforge/problem"]), json.loads(r["demoforge/seed"])["episode"]): r["episode_index"]
              for r in reader.iter_episodes()}
    obs, info = env.reset(seed=1)
    first = reader.read_episode(starts[(info["problem"], info["episode_index"])])["observation.environment_state"][0]
    np.testing.assert_allclose(obs["environment_state"], first, atol=1e-7)


def test_a_goal_without_regions_is_refused(family_run, tmp_path):
    with pytest.raises(DemoforgeError, match="names no region"):
        FamilyEnv(FamilyEnvConfig(task="stack_three", environment_state="goal")).shapes()
    with pytest.raises(DemoforgeError, match="kind 'towers'"):
        FamilyEnv(FamilyEnvConfig(task="pnp", environment_state="towers")).shapes()


def test_bake_refuses_the_kind_without_the_state(family_run, tmp_path):
    from typer.testing import CliRunner

    from demoforge.cli.main import app

    result = CliRunner().invoke(app, ["bake", str(family_run), "--out", str(tmp_path / "b"),
                                      "--environment-state-kind", "goal"])
    assert result.exit_code == 2 and "--environment-state" in result.output, result.output
    assert not (tmp_path / "b").exists()
