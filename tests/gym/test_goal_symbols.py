"""A goal that names a face or a yaw step (flip, rotate) ends the environment state with that
target, one-hot: no object pose says which face must end up or which heading the block must
take, so without it a state policy cannot know its task. Baked and observed alike."""

import json

import numpy as np
import pytest

from demoforge.convert import BakeConfig, bake
from demoforge.dataset import open_dataset
from demoforge.execute import generate
from demoforge.gym import FamilyEnv, FamilyEnvConfig
from demoforge.raw.envstate import goal_code
from demoforge.replay import EPISODE_MODELS
from demoforge.symbolic.orientation import FACES, YAWS
from demoforge.tasks import generate_family, write_tasks


def test_goal_code_is_one_hot_per_symbol_in_goal_order():
    code, names = goal_code([("face_up", "a", "py"), ("yaw", "b", "yaw270"), ("on", "a", "b")])
    assert names == tuple(f"goal_0.{f}" for f in FACES) + tuple(f"goal_1.{y}" for y in YAWS)
    np.testing.assert_array_equal(code, [0, 0, 1, 0, 0, 0] + [0, 0, 0, 1])
    assert goal_code([("on", "a", "b"), ("in_region", "a", "left")])[0].shape == (0,)  # stack, pnp: nothing added


@pytest.mark.parametrize("family, symbols", [("flip", FACES), ("rotate", YAWS)])
@pytest.mark.parametrize("kind", ["objects", "goal"])
def test_the_env_observes_the_goal_symbol(family, symbols, kind):
    env = FamilyEnv(FamilyEnvConfig(task=family, split="test", problems=6, episodes=6, environment_state=kind))
    width = env.shapes()["environment_state"][0]
    names = env.names()["environment_state"]
    assert len(names) == width and names[-len(symbols):][0].endswith("." + symbols[0])  # the target's block ends it
    assert all(n.split(".")[1] in symbols for n in names[-len(symbols):])
    seen = set()
    for seed in range(6):
        obs, info = env.reset(seed=seed)
        atom = next(a for a in env.goals[env.p] if a[-1] in symbols)
        tail = obs["environment_state"][-len(symbols):]
        np.testing.assert_array_equal(tail, [float(s == atom[-1]) for s in symbols])
        seen.add(atom[-1])
    assert len(seen) > 1, f"six {family} problems all asked for {seen}: the one-hot would carry nothing"


@pytest.fixture(scope="module")
def flip_run(tmp_path_factory):
    tasks = tmp_path_factory.mktemp("flip")
    paths = write_tasks(generate_family("flip", count=1, seed=0, split="train"), tasks)
    problems = sorted(p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl")
    out = tasks / "run"
    assert generate(problems, out, episodes_per_problem=1, envs=1, seed=0).successes == 1
    return out


def test_bake_writes_the_goal_symbol_the_env_observes(flip_run, tmp_path):
    baked = bake([flip_run], tmp_path / "b", BakeConfig(control_freq=15, environment_state=True), models=EPISODE_MODELS)
    reader = open_dataset(baked)
    names = reader.info.features["observation.environment_state"].names
    assert names[-6:] == [f"goal_0.{f}" for f in FACES]
    goal = json.loads(reader.episode(0)["demoforge/goal"])
    face = next(g.strip("()").split()[-1] for g in goal if g.startswith("(face_up"))
    state = reader.read_episode(0, ["observation.environment_state"])["observation.environment_state"]
    np.testing.assert_array_equal(state[:, -6:], np.tile([float(f == face) for f in FACES], (len(state), 1)))
    stamp = json.loads((baked / "meta/bake.json").read_text())
    assert stamp["environment_state"]["names"] == names


def test_the_goal_face_is_given_where_it_points_now():
    """Flip's objects kind gives the goal face's world direction (before the one-hot): its
    rotated block axis, (0, 0, 1) exactly when the face is up. The goal kind (no object pose)
    leaves it out."""
    env = FamilyEnv(FamilyEnvConfig(task="flip", split="test", problems=6, episodes=6))
    names = env.names()["environment_state"]
    at = names.index("goal_0.face_x")
    assert names[at:at + 3] == ["goal_0.face_x", "goal_0.face_y", "goal_0.face_z"] and names[at + 3] == "goal_0.px"
    for seed in range(6):
        obs, info = env.reset(seed=seed)
        face = next(a for a in env.goals[env.p] if a[0] == "face_up")
        row = env.layout.objects.index(face[1])
        state = obs["environment_state"]
        w, x, y, z = state[10 * row + 3:10 * row + 7]
        rot = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
        axis = rot[:, "xyz".index(face[2][1])] * (1 if face[2][0] == "p" else -1)
        np.testing.assert_allclose(state[at:at + 3], axis, atol=1e-5)
        assert state[at + 2] < 0.9, "a flip starts with its goal face not up"
    goal_kind = FamilyEnv(FamilyEnvConfig(task="flip", split="test", problems=6, episodes=6, environment_state="goal"))
    assert not any(".face_" in n for n in goal_kind.names()["environment_state"])
