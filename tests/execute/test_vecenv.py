"""VecSimEnv: a user task without PDDL, auto-reset, truncation, per-episode seeding, PDDL success."""

import numpy as np
import pytest

from demoforge.execute import ExecuteError, SimTask, VecSimEnv, load_problems, pddl_task
from demoforge.sim import Box, build_scene, default_scene, reset


def _reach_task(name: str, *, reachable: bool, starts: dict, max_ticks: int = 240) -> SimTask:
    """Turn joint 1 by 0.5 rad; a cube at a seeded spot (recorded in `starts`)."""

    def start(episode, seed, rng):
        y = float(rng.uniform(-0.1, 0.1))
        starts[(name, episode)] = y
        scene = build_scene(default_scene(props=(Box("c", (0.04,) * 3, (0.55, y, 0.42)),)))
        reset(scene)
        return scene

    def success(scene, ctx):
        q0 = scene.robot.card.home[0]
        return reachable and scene.data.qpos[scene.robot.arm_qpos[0]] > q0 + 0.4

    return SimTask(name, start, success, max_ticks=max_ticks)


def _drive(env: VecSimEnv) -> list[tuple[tuple[int, int], bool]]:
    finished = []
    env.reset(seed=7)
    while not env.exhausted:
        actions = np.zeros((env.num_envs, env.n_arm + 1))
        for i, scene in enumerate(env.scenes):
            if scene is not None:
                actions[i, :-1] = np.asarray(scene.robot.card.home)
                actions[i, 0] += 0.5
        obs, reward, terminated, truncated, info = env.step(actions)
        assert obs["observation.state"].shape == (env.num_envs, env.n_arm + 1)
        for i in np.flatnonzero(info["done"]):
            assert terminated[i] or truncated[i]
            finished.append((info["final_episode"][i], bool(info["final_success"][i])))
    return finished


def test_user_task_runs_every_episode_once_with_auto_reset_and_truncation():
    starts: dict = {}
    tasks = [_reach_task("reach", reachable=True, starts=starts),
             _reach_task("never", reachable=False, starts=starts, max_ticks=5)]
    env = VecSimEnv(tasks, num_envs=2, episodes=3)
    finished = _drive(env)
    assert sorted(e for e, _ in finished) == [(t, e) for t in range(2) for e in range(3)]
    assert all(ok == (e[0] == 0) for e, ok in finished)


def test_finished_envs_reset_without_waiting_for_the_others():
    starts: dict = {}
    tasks = [_reach_task("reach", reachable=True, starts=starts),
             _reach_task("never", reachable=False, starts=starts, max_ticks=1)]
    env = VecSimEnv(tasks, num_envs=2, episodes=[(0, 0), (1, 0), (1, 1), (1, 2)])
    finished = _drive(env)
    # slot 1 runs the three 1-tick episodes one after the other while slot 0 still reaches
    assert [e for e, _ in finished] == [(1, 0), (1, 1), (1, 2), (0, 0)]


def test_episode_randomness_does_not_depend_on_the_slot():
    runs = []
    for n in (1, 3):
        starts: dict = {}
        _drive(VecSimEnv([_reach_task("reach", reachable=True, starts=starts)], num_envs=n, episodes=3))
        runs.append(starts)
    assert runs[0] == runs[1]
    assert len(set(runs[0].values())) == 3


def test_pddl_task_success_is_the_goal(pnp):
    (problem,) = load_problems(pnp[:1])
    task = pddl_task(problem)
    ctx = task.start(0, 0, np.random.default_rng(0))
    assert not task.success(ctx.scene, ctx)  # the block starts outside its region
    assert ("holding", problem.task.objects[0][0]) not in ctx.atoms()


def test_invalid_env_is_refused():
    with pytest.raises(ExecuteError, match="num_envs"):
        VecSimEnv([_reach_task("a", reachable=True, starts={})], num_envs=0)
    with pytest.raises(ExecuteError, match="unique"):
        VecSimEnv([_reach_task("a", reachable=True, starts={})] * 2, num_envs=1)
