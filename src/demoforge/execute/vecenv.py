"""VecSimEnv: N MuJoCo environments of one or several tasks in one process, stepped together.

    env = VecSimEnv([pddl_task(problem)], num_envs=8, episodes=20)
    obs, info = env.reset(seed=0)
    while not env.exhausted:
        actions = np.stack([...])  # (N, n_arm + 1): arm command under the law + gripper closedness
        obs, reward, terminated, truncated, info = env.step(actions)
        info["success"], info["done"], info["final_success"], info["final_spoiled"]  # (N,) bool each

A `SimTask` is how to start an episode (a scene in its first state) and when it
succeeds; `pddl_task` makes one from a PDDL problem whose success is its goal on the
live abstraction with nothing it keeps disturbed (a goal reached by knocking a block over
onto another face is `spoiled`: the episode ends, failed), and a user brings their own
without PDDL. Episodes come from a queue
in canonical order, (task, episode index), and each episode's randomness derives from
(seed, task name, episode index) only, so which slot runs it never matters. An env whose
episode ends (success or spoiled with `terminate_on_success`, `max_ticks`, or `finish(i)` from a
client such as the expert loop) takes the next queued episode at once, without
waiting for the others; `info["final_*"]` then describe the episode that ended.

With `randomization=spec` every reset draws physics randomization for that env from the
episode's "randomization" stream (`execute.problems.STREAMS`) and applies it
(`scenes.randomization`: model-level draws recompile that env's model, runtime-only
draws do not); `env.randomization_draws[i]` and `info["randomization"]` hold the draws.

Per tick the work is one `control_step` per active env (a few array writes, then
`mj_step` substeps) and the task's success predicate; clients precompute their command
trajectories (skill plans) and only index them per tick.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from demoforge.dataset.keys import STATE
from demoforge.execute.problems import ExecuteError, Problem, episode_rngs, episode_seed, start_episode
from demoforge.randomize import RandomizationSpec
from demoforge.scenes.randomization import randomize_scene
from demoforge.sim import ControlLaw, Scene, control_step, gripper_closedness
from demoforge.symbolic import abstract
from demoforge.tasks import disturbed, holds


@dataclass(frozen=True)
class SimTask:
    """A task VecSimEnv can run: how an episode starts and when it has succeeded."""

    name: str  # unique among the env's tasks; part of every episode's seed
    start: Callable[[int, int, np.random.Generator], Any]  # (episode, run seed, rng) -> Scene, or an object with .scene
    success: Callable[[Scene, Any], bool]  # (scene, what start returned) -> goal reached now
    max_ticks: int = 60 * 120  # an episode is truncated after this many control ticks
    terminate_on_success: bool = True  # end the episode the tick success first holds
    # (scene, what start returned) -> the goal holds but only by disturbing what it keeps (a block knocked
    # over onto another face, `tasks.disturbed`): the episode ends there, failed, like a success would end it
    spoiled: Callable[[Scene, Any], bool] | None = None


class PddlEpisode:
    """What `pddl_task` starts: the EpisodeStart plus a per-state cache of the abstraction,
    so the success check and a recorder reading the same state abstract it once."""

    def __init__(self, start):
        self.start = start
        self.scene = start.scene
        self.binding = start.binding
        self._atoms_at: float | None = None
        self._atoms: frozenset = frozenset()
        self._key = -1
        self.start_atoms: frozenset | None = None  # the first state abstracted: what the goal's judge keeps

    def atoms(self) -> frozenset:
        """The true atoms now (cached until the state changes: time or a restore bumps `touch`)."""
        key = (self.scene.data.time, self._key)
        if key != self._atoms_at:
            self._atoms = abstract(self.scene.model, self.scene.data, self.binding)
            self._atoms_at = key
            if self.start_atoms is None:
                self.start_atoms = self._atoms
        return self._atoms

    def verdict(self, task) -> str | None:
        """The judgement now: "success" when `task`'s goal holds and nothing it keeps differs from the
        first state abstracted, "disturbed" when it holds only so (`tasks.disturbed`), else None."""
        atoms = self.atoms()
        if not holds(task, task.goal, atoms):
            return None
        return "disturbed" if disturbed(task, self.start_atoms, atoms) else "success"

    def touch(self) -> None:
        """The state was changed without time advancing (a restore): drop the cache."""
        self._key -= 1


def pddl_task(problem: Problem, *, max_ticks: int = 60 * 120, terminate_on_success: bool = True) -> SimTask:
    """A SimTask for a PDDL problem: episodes from `start_episode`, success = the goal holds
    in the live abstraction with nothing it keeps disturbed (`PddlEpisode.verdict`)."""
    task = problem.task

    def start(episode: int, seed: int, rng: np.random.Generator) -> PddlEpisode:
        return PddlEpisode(start_episode(problem, seed, episode))

    return SimTask(problem.name, start, max_ticks=max_ticks, terminate_on_success=terminate_on_success,
                   **goal_judges(task))


def goal_judges(task) -> dict[str, Callable[[Scene, PddlEpisode], bool]]:
    """A SimTask's `success` and `spoiled` for a PDDL task run in PddlEpisodes (`PddlEpisode.verdict`)."""
    return {"success": lambda scene, ctx: ctx.verdict(task) == "success",
            "spoiled": lambda scene, ctx: ctx.verdict(task) == "disturbed"}


def canonical_episodes(n_tasks: int, episodes: int) -> list[tuple[int, int]]:
    """(task, episode) in canonical order: task order, then episode index."""
    return [(t, e) for t in range(n_tasks) for e in range(episodes)]


def _endless(n_tasks: int) -> Iterator[tuple[int, int]]:
    k = 0
    while True:
        yield k % n_tasks, k // n_tasks
        k += 1


class VecSimEnv:
    """N environments stepped in lockstep at the control rate; see the module docstring."""

    def __init__(self, tasks: Sequence[SimTask], num_envs: int, *, episodes: int | Sequence[tuple[int, int]] | None = None,
                 seed: int = 0, law: ControlLaw | None = None, control_hz: float = 60.0,
                 randomization: RandomizationSpec | None = None):
        problems = []
        if num_envs < 1:
            problems.append(f"num_envs: {num_envs} must be >= 1")
        if not tasks:
            problems.append("tasks: at least one task is needed")
        names = [t.name for t in tasks]
        if len(set(names)) != len(names):
            problems.append(f"tasks: names must be unique, got {names}")
        if not control_hz > 0:
            problems.append(f"control_hz: {control_hz} must be > 0")
        if problems:
            raise ExecuteError("invalid VecSimEnv:\n  " + "\n  ".join(problems))
        self.tasks = tuple(tasks)
        self.num_envs = int(num_envs)
        self.seed = int(seed)
        self.law = law
        self.control_hz = float(control_hz)
        self._episodes = episodes
        self.randomization = randomization
        self.randomization_draws: list[dict | None] = [None] * self.num_envs  # the running episodes' draws
        self.scenes: list[Scene | None] = [None] * self.num_envs
        self.contexts: list[Any] = [None] * self.num_envs  # what each task's start returned
        self.ids: list[tuple[int, int] | None] = [None] * self.num_envs  # (task, episode) per slot
        self.rng: list[np.random.Generator | None] = [None] * self.num_envs  # the running episode's Generator
        self.ticks = np.zeros(self.num_envs, np.int64)
        self._laws: list[ControlLaw | None] = [None] * self.num_envs
        self._substeps = np.ones(self.num_envs, np.int64)
        self._queue: Iterator[tuple[int, int]] = iter(())
        self.n_arm: int | None = None

    # -- episodes ----------------------------------------------------------------------
    @property
    def active(self) -> np.ndarray:
        """(N,) bool: slots running an episode."""
        return np.array([i is not None for i in self.ids])

    @property
    def exhausted(self) -> bool:
        """No slot is running an episode and the queue is empty."""
        return not any(i is not None for i in self.ids)

    def _load(self, i: int) -> None:
        nxt = next(self._queue, None)
        self.ids[i] = nxt
        self.ticks[i] = 0
        if nxt is None:
            self.scenes[i], self.contexts[i], self.rng[i] = None, None, None
            self.randomization_draws[i] = None
            return
        t, e = nxt
        task = self.tasks[t]
        rng = np.random.default_rng(episode_seed(self.seed, task.name, e))
        ctx = task.start(e, self.seed, rng)
        scene = ctx if isinstance(ctx, Scene) else ctx.scene
        draw = None
        if self.randomization is not None:
            stream = episode_rngs(self.seed, task.name, e)["randomization"]
            scene, draw = randomize_scene(scene, self.randomization, stream)
            if isinstance(ctx, Scene):
                ctx = scene
            else:
                ctx.scene = scene
        self.randomization_draws[i] = draw
        law = self.law or scene.robot.card.controller
        substeps = round(1.0 / (self.control_hz * scene.model.opt.timestep))
        if substeps < 1 or abs(substeps * scene.model.opt.timestep * self.control_hz - 1.0) > 1e-6:
            raise ExecuteError(f"task {task.name!r}: control rate {self.control_hz} Hz is not a whole number of "
                               f"physics steps of {scene.model.opt.timestep} s")
        n_arm = len(scene.robot.arm_qpos)
        if self.n_arm is None:
            self.n_arm = n_arm
        elif n_arm != self.n_arm:
            raise ExecuteError(f"task {task.name!r} has a {n_arm}-joint arm, other tasks {self.n_arm}; one robot per env")
        self.scenes[i], self.contexts[i], self.rng[i] = scene, ctx, rng
        self._laws[i], self._substeps[i] = law, substeps

    def reset(self, seed: int | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Restart the episode queue (with `seed` if given) and fill every slot."""
        if seed is not None:
            self.seed = int(seed)
        eps = self._episodes
        if eps is None:
            self._queue = _endless(len(self.tasks))
        elif isinstance(eps, int):
            self._queue = iter(canonical_episodes(len(self.tasks), eps))
        else:
            self._queue = iter(list(eps))
        for i in range(self.num_envs):
            self._load(i)
        return self.observe(), {"episode": list(self.ids), "randomization": list(self.randomization_draws)}

    def finish(self, i: int) -> None:
        """End slot `i`'s episode now (a client decided) and load the next queued one."""
        self._load(i)

    # -- stepping ----------------------------------------------------------------------
    def observe(self) -> dict[str, np.ndarray]:
        """(N, n_arm + 1) arm joints [rad] + gripper closedness; NaN rows for idle slots."""
        n = self.n_arm or 0
        state = np.full((self.num_envs, n + 1), np.nan)
        for i, scene in enumerate(self.scenes):
            if scene is not None:
                q = scene.data.qpos
                state[i, :n] = q[scene.robot.arm_qpos]
                state[i, n] = gripper_closedness(scene.robot, q)
        return {STATE: state}

    def step_one(self, i: int, command: np.ndarray, gripper: float) -> None:
        """One control tick of slot `i` only (clients that drive slots one by one)."""
        control_step(self.scenes[i], self._laws[i], command, gripper, int(self._substeps[i]))
        self.ticks[i] += 1

    def step(self, actions: np.ndarray):
        """One control tick of every active slot; returns obs, reward, terminated, truncated, info.

        `actions[i]` is the arm command under the law followed by gripper closedness; rows
        of idle slots are ignored. Ended episodes are replaced at once (auto-reset): the
        returned obs is then the new episode's first, and info["final_success"],
        info["final_episode"], info["final_context"] describe the one that ended."""
        actions = np.asarray(actions, dtype=float)
        n = self.num_envs
        success = np.zeros(n, bool)
        terminated, truncated, done = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, bool)
        final_success, final_spoiled = np.zeros(n, bool), np.zeros(n, bool)
        final_episode: list[tuple[int, int] | None] = [None] * n
        final_context: list[Any] = [None] * n
        final_randomization: list[dict | None] = [None] * n
        for i, ident in enumerate(self.ids):
            if ident is None:
                continue
            control_step(self.scenes[i], self._laws[i], actions[i, :-1], float(actions[i, -1]), int(self._substeps[i]))
            self.ticks[i] += 1
            task = self.tasks[ident[0]]
            success[i] = task.success(self.scenes[i], self.contexts[i])
            spoiled = not success[i] and task.spoiled is not None and task.spoiled(self.scenes[i], self.contexts[i])
            terminated[i] = (success[i] or spoiled) and task.terminate_on_success
            truncated[i] = not terminated[i] and self.ticks[i] >= task.max_ticks
            if terminated[i] or truncated[i]:
                done[i], final_success[i], final_spoiled[i] = True, success[i], spoiled
                final_episode[i], final_context[i] = ident, self.contexts[i]
                final_randomization[i] = self.randomization_draws[i]
                self._load(i)
        info = {"success": success, "done": done, "final_success": final_success, "final_spoiled": final_spoiled,
                "final_episode": final_episode,
                "final_context": final_context, "final_randomization": final_randomization,
                "episode": list(self.ids), "randomization": list(self.randomization_draws)}
        return self.observe(), success.astype(np.float64), terminated, truncated, info

