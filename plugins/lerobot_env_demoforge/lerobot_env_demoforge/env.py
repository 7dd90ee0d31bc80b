"""The Gymnasium face of demoforge.gym.FamilyEnv (spaces, seeding, time limit, vector envs)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from demoforge.gym import FamilyEnv, FamilyEnvConfig


class DemoforgeGymEnv(gym.Env):
    """One demoforge family env. Observation: agent_pos, environment_state (, pixels);
    `info["is_success"]`: the PDDL goal holds; reward: the fraction of goal atoms holding."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 15}

    def __init__(self, config: FamilyEnvConfig, render_mode: str = "rgb_array"):
        self.core = FamilyEnv(config)
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "render_fps": config.action.control_freq}
        shapes = self.core.shapes()
        obs = {"agent_pos": spaces.Box(-np.inf, np.inf, shapes["agent_pos"], np.float32),
               "environment_state": spaces.Box(-np.inf, np.inf, shapes["environment_state"], np.float32)}
        if config.cameras:
            obs["pixels"] = spaces.Dict({c: spaces.Box(0, 255, shapes[f"pixels/{c}"], np.uint8)
                                         for c in config.cameras})
        self.observation_space = spaces.Dict(obs)
        # arm components are unbounded in the convention's units; the gripper is a closedness
        low = np.full(shapes["action"], -np.inf, np.float32)
        high = np.full(shapes["action"], np.inf, np.float32)
        low[-1], high[-1] = 0.0, 1.0
        self.action_space = spaces.Box(low, high, dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        return self.core.reset(seed=seed)

    def step(self, action):
        obs, reward, terminated, info = self.core.step(np.asarray(action, dtype=np.float64))
        return obs, float(reward), bool(terminated), False, info

    def render(self):
        return self.core.render()

    @property
    def task(self) -> str:
        return self.core.cfg.task

    def task_description(self) -> str:
        return self.core.task_description()

    def close(self):
        self.core.close()


def make_env(config: FamilyEnvConfig, max_steps: int) -> gym.Env:
    return gym.wrappers.TimeLimit(DemoforgeGymEnv(config), max_episode_steps=max_steps)


def make_vector_env(config: FamilyEnvConfig, max_steps: int, n_envs: int, use_async: bool) -> gym.vector.VectorEnv:
    """n_envs envs in lerobot's layout: same-step autoreset, sub-envs frozen once their episode ends."""
    from functools import partial

    from lerobot.envs.utils import freeze_after_episode_end

    fns = [freeze_after_episode_end(partial(make_env, config, max_steps)) for _ in range(n_envs)]
    cls = gym.vector.AsyncVectorEnv if use_async and n_envs > 1 else gym.vector.SyncVectorEnv
    kwargs = {"context": "forkserver"} if cls is gym.vector.AsyncVectorEnv else {}
    return cls(fns, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP, **kwargs)
