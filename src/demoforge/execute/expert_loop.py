"""ExpertLoop: the expert's episodes of many problems on one VecSimEnv, every env stepped
together, each slot refilled with the next episode as its episode ends. One episode's planning,
skills, verification and recovery is `demoforge.execute.expert_episode.ExpertEpisode`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from demoforge.execute.expert_episode import EpisodeResult, ExpertEpisode, ExpertSettings
from demoforge.execute.problems import EpisodeStart, ExecuteError, Problem
from demoforge.execute.record import RunLayout
from demoforge.execute.seams import (
    DEFAULT_PLANNER, AfterSkill, EpisodeHooks, GoalSource, PlannerFactory, slot_after_skill,
)
from demoforge.execute.vecenv import VecSimEnv, pddl_task
from demoforge.randomize import RandomizationSpec
from demoforge.sim import command_size


class ExpertLoop:
    """Runs `episodes` episodes of each problem on `num_envs` envs and hands each finished
    episode to `on_episode` (in completion order; the caller orders them). Each episode gets a
    planner from `planner`, a goal source from `goal_source(start)` (None: the problem's goal
    only) and `hooks`; `after_skill` is the run-level form of `hooks.after_skill`."""

    def __init__(self, problems: list[Problem], layout: RunLayout, *, num_envs: int, seed: int,
                 episodes: list[tuple[int, int]], settings: ExpertSettings = ExpertSettings(),
                 after_skill: AfterSkill | None = None, randomization: RandomizationSpec | None = None,
                 planner: PlannerFactory = DEFAULT_PLANNER,
                 goal_source: Callable[[EpisodeStart], GoalSource] | None = None,
                 hooks: EpisodeHooks = EpisodeHooks()):
        if after_skill is not None:
            if hooks.after_skill is not None:
                raise ExecuteError("ExpertLoop: give after_skill or hooks.after_skill, not both")
            hooks = dataclasses.replace(hooks, after_skill=slot_after_skill(after_skill))
        self.problems, self.layout, self.settings = problems, layout, settings
        self.planner, self.goal_source, self.hooks = planner, goal_source, hooks
        max_ticks = round(settings.max_episode_s * settings.control_hz)
        tasks = [pddl_task(p, max_ticks=max_ticks + 1, terminate_on_success=False) for p in problems]
        self.env = VecSimEnv(tasks, num_envs, episodes=episodes, seed=seed, law=layout.law,
                             control_hz=settings.control_hz, randomization=randomization)
        self.max_ticks = max_ticks

    def episode(self, i: int) -> ExpertEpisode:
        """The expert's episode of the episode env slot `i` was just reset to."""
        env = self.env
        goals = None if self.goal_source is None else self.goal_source(env.contexts[i].start)
        return ExpertEpisode(env, i, self.problems[env.ids[i][0]], self.layout, self.settings, planner=self.planner,
                             goals=goals, hooks=self.hooks)

    def run(self, on_episode: Callable[[EpisodeResult], None]) -> None:
        env = self.env
        env.reset()
        slots: list[ExpertEpisode | None] = [None] * env.num_envs
        n_cmd = None

        def fill(i: int) -> None:
            while env.ids[i] is not None:
                slot = self.episode(i)
                if slot.outcome is None:
                    slots[i] = slot
                    return
                on_episode(slot.result())
                env.finish(i)
            slots[i] = None

        for i in range(env.num_envs):
            fill(i)
        while any(s is not None for s in slots):
            n_cmd = n_cmd or command_size(self.layout.law, env.n_arm)
            actions = np.zeros((env.num_envs, n_cmd + 1))
            for i, slot in enumerate(slots):
                if slot is None:
                    continue
                q, g, op, ph = slot.command()
                slot.rec.record(None, q, g, op, ph)  # symbolic state sampled now, abstracted per episode
                actions[i, :n_cmd], actions[i, n_cmd] = q, g
            for i, slot in enumerate(slots):
                if slot is not None:
                    env.step_one(i, actions[i, :n_cmd], actions[i, n_cmd])
            for i, slot in enumerate(slots):
                if slot is None:
                    continue
                slot.advance()
                if slot.outcome is None and slot.rec.length >= self.max_ticks:
                    slot.timeout()
                if slot.outcome is not None:
                    on_episode(slot.result())
                    env.finish(i)
                    fill(i)

