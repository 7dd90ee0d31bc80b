"""Play data: goals chained in one scene without resets, recorded as one long episode.

    summary = generate_play(["tasks/stack_three-all-0000.pddl"], "out/play", episodes_per_problem=2,
                            goals=3, seed=0)

Each episode starts like an execute episode (same start states and seeds) and runs the
expert to the problem's goal; then a next goal is sampled from the reached symbolic state
(a seeded random walk from it over every operator of the domain, ending hand-empty; the
goal is the walk's new atoms, a new yaw with its face), planned from where the scene is and
executed, `goals` times in all. Each walk step first draws an operator, uniformly among those with an applicable
grounding, then one of its groundings, so flips, rotations and region placements are as
likely as picks, puts and stacks (drawing groundings alone would let flip's many face pairs
crowd the rest out). The episode's `plan` extra lists every executed step (so `annotate`
gives a goal.action that changes over time) and the `play` extra lists each goal with its
tick range and the operators executed for it. An episode that fails a goal ends there and
goes to the failure split with the goals it reached.

This is the expert's episode (`demoforge.execute.ExpertEpisode`) with a goal source that
samples the next goals (`PlayGoals`) and hooks that keep and record the segments, run by
`generate` itself (its `expert`, `PlayLoop`): workers, resume, randomization and inline
videos as there, and the bytes do not depend on the worker or env count.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from pathlib import Path

import numpy as np

from demoforge.errors import PlanningError
from demoforge.execute import (
    EpisodeHooks,
    ExecuteError,
    ExpertLoop,
    GenerateSummary,
    ExpertSettings,
    generate,
    goal_words,
)
from demoforge.execute.problems import STREAMS, episode_seed
from demoforge.tasks import goal_atoms
from demoforge.tasks.pddl_text import format_atom
from demoforge.tasks.simulate import Step, apply
from demoforge.tasks.check import type_of

IGNORED_IN_GOALS = ("hand_empty", "holding", "clear")  # implied by the placement atoms
WALK_STEPS = 6  # longest random walk before a goal is read off [steps]
STOP_P = 0.5  # chance that a walk stops at a hand-empty state with new atoms (short walks: goals of few atoms)


def ground_steps(task, state: frozenset) -> list[Step]:
    """Every applicable step of every operator of the domain in `state`, sorted."""
    out = []
    for name in sorted(task.index.actions):
        params = list(task.index.actions[name].parameters)
        choices = [task.index.of_type.get(type_of(p.type_tags), ()) for p in params]
        for args in itertools.product(*choices):
            step = Step(name, tuple(args))
            try:
                apply(task, state, step)
            except PlanningError:
                continue
            out.append(step)
    return out


def _draw_step(steps: list[Step], rng: np.random.Generator) -> Step:
    """An operator uniformly among those in `steps`, then one of its steps uniformly."""
    operators = sorted({st.action for st in steps})
    name = operators[int(rng.integers(len(operators)))]
    mine = [st for st in steps if st.action == name]
    return mine[int(rng.integers(len(mine)))]


def sample_goal(task, state: frozenset, rng: np.random.Generator) -> list[tuple]:
    """Atoms of a state a seeded random walk over the domain's operators reaches from `state`
    that do not hold now (fluent atoms but hand_empty, holding and clear); [] when no walk finds one."""
    for _ in range(8):
        s = state
        for _ in range(WALK_STEPS):
            steps = ground_steps(task, s)
            if not steps:
                break
            s = apply(task, s, _draw_step(steps, rng))
            if ("hand_empty",) in s and _new_atoms(task, state, s) and rng.random() < STOP_P:
                break
        if any(a[0] == "holding" for a in s):  # end hand-empty: put the held block somewhere
            steps = [st for st in ground_steps(task, s) if "hand_empty" in {a[0] for a in apply(task, s, st)}]
            if not steps:
                continue
            s = apply(task, s, _draw_step(steps, rng))
        new = _new_atoms(task, state, s)
        if new:
            return new
    return []


def _new_atoms(task, before: frozenset, after: frozenset) -> list[tuple]:
    new = {a for a in after - before if a[0] in task.fluent_predicates and a[0] not in IGNORED_IN_GOALS}
    # A yaw is read off the face that is up, and a flip moves it too: a new yaw names its face,
    # so the goal asks for a turn, not for any tip that happens to give that yaw.
    turned = {a[1] for a in new if a[0] == "yaw"}
    return sorted(new | {a for a in after if a[0] == "face_up" and a[1] in turned})


class PlayGoals:
    """The goal source of one play episode: after the problem's goal, `goals - 1` goals sampled
    from the reached state (`sample_goal`), fewer when no walk finds one. It also keeps the
    episode's segments: each reached goal with its tick range and the operators run for it."""

    name = "play"  # a next goal's planning is "play goal <n>"

    def __init__(self, goals: int, rng: np.random.Generator):
        self.goals_left = goals - 1
        self.rng = rng
        self.segments: list[dict] = []
        self.goal_start = 0  # tick the current goal's segment starts at

    @classmethod
    def of_episode(cls, goals: int, seed: int, start) -> PlayGoals:
        """The source of the episode `start` (an `EpisodeStart`) of a run with `seed`: a fifth child of
        the episode's seed (after execute's STREAMS) draws its goals, so they depend only on (run
        seed, problem, episode), not on which other problems share the expert loop."""
        streams = episode_seed(seed, start.problem.name, start.episode).spawn(len(STREAMS) + 1)
        return cls(goals, np.random.default_rng(streams[-1]))

    def next_goal(self, episode, state: frozenset) -> list[tuple] | None:
        if self.goals_left <= 0:
            return None
        goal = sample_goal(episode.task, state, self.rng)
        if goal:
            self.goals_left -= 1
        return goal

    def goal_reached(self, episode, state: frozenset) -> None:
        """Close the segment of the goal that holds now."""
        ran = sorted({s["operator"] for s in episode.executed if s["ticks"][0] >= self.goal_start})
        self.segments.append({"goal": [format_atom(a) for a in goal_atoms(episode.task)],
                              "words": goal_words(episode.task), "ticks": [self.goal_start, episode.rec.length],
                              "operators": ran})
        self.goal_start = episode.rec.length

    def label(self, episode, result):
        """The episode's result with every reached goal in its task words and its `play` extra."""
        words = "; then ".join(s["words"] for s in self.segments) or goal_words(episode.task)
        return dataclasses.replace(result, task=words, extra={**result.extra, "play": self.segments})


# Play's hooks: the episode's goal source (a PlayGoals) keeps its segments and labels its result.
PLAY_HOOKS = EpisodeHooks(on_goal_reached=lambda episode, state: episode.goals.goal_reached(episode, state),
                          on_result=lambda episode, result: episode.goals.label(episode, result))


class PlayLoop(ExpertLoop):
    """The expert loop with play's goal source and hooks: episodes chain `goals` goals. A named
    class, so `generate` records it in run.json and workers build it by name."""

    def __init__(self, *args, goals: int, seed: int, hooks: EpisodeHooks = EpisodeHooks(), **kwargs):
        taken = [n for n in ("on_goal_reached", "on_result") if getattr(hooks, n) is not None]
        if taken:
            raise ExecuteError(f"PlayLoop: hooks {taken} are play's own; give only after_skill and on_failure")
        hooks = dataclasses.replace(hooks, on_goal_reached=PLAY_HOOKS.on_goal_reached, on_result=PLAY_HOOKS.on_result)
        super().__init__(*args, seed=seed, goal_source=functools.partial(PlayGoals.of_episode, goals, seed),
                         hooks=hooks, **kwargs)
        self.goals, self.seed = goals, seed


def generate_play(inputs: list[str | Path], out: str | Path, *, episodes_per_problem: int, goals: int,
                  envs: int = 1, workers: int | str = 1, seed: int = 0, settings: ExpertSettings = ExpertSettings(),
                  domain: str = "blocks", robot=None, progress=None, randomization=None,
                  record_videos=None, control_law: str | None = None, robot_start=None,
                  problems_per_process: int = 8, executor=None, materials=None, **run_with) -> GenerateSummary:
    """Play episodes of every problem into OUT/success and OUT/failure: `generate` (its layout,
    workers, resume, physics randomization, inline videos, control law and robot start, see
    `execute.generate`, materials included) with episodes that chain `goals` goals, each allowed `settings.max_episode_s`.
    The goal count is recorded in run.json, so a rerun with another count is refused as another run.
    `run_with`: generate's (what runs the stage), when given."""
    if goals < 1:
        raise ExecuteError(f"play: goals {goals} must be >= 1 (the problem's own goal is the first)")
    settings = dataclasses.replace(settings, max_episode_s=settings.max_episode_s * goals)
    return generate(inputs, out, episodes_per_problem=episodes_per_problem, envs=envs, workers=workers, seed=seed,
                    settings=settings, domain=domain, progress=progress, randomization=randomization,
                    record_videos=record_videos, robot=robot, control_law=control_law, robot_start=robot_start,
                    expert=PlayLoop, expert_options={"goals": goals}, problems_per_process=problems_per_process,
                    executor=executor, materials=materials, **run_with)
