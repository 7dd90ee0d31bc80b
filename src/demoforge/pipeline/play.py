"""Play data: goals chained in one scene without resets, recorded as one long episode.

    summary = generate_play(["tasks/stack_three-all-0000.pddl"], "out/play", episodes_per_problem=2,
                            goals=3, seed=0)

Each episode starts like an execute episode (same start states and seeds) and runs the
expert to the problem's goal; then a next goal is sampled from the reached symbolic state
(a seeded random walk from it over every operator of the domain, ending hand-empty; the
goal is the walk's new atoms), planned from where the scene is and executed, `goals` times
in all. Each walk step first draws an operator, uniformly among those with an applicable
grounding, then one of its groundings, so flips, rotations and region placements are as
likely as picks, puts and stacks (drawing groundings alone would let flip's many face pairs
crowd the rest out). The episode's `plan` extra lists every executed step (so `annotate`
gives a goal.action that changes over time) and the `play` extra lists each goal with its
tick range and the operators executed for it. An episode that fails a goal ends there and
goes to the failure split with the goals it reached.

This builds on the expert's episode (`demoforge.execute.ExpertEpisode`, subclassed) run by
`generate` itself (its `runner`): workers, resume, randomization and inline videos as there,
and the bytes do not depend on the worker or env count.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import numpy as np

from demoforge.errors import PlanningError
from demoforge.execute import ExecuteError, GenerateSummary, RunnerSettings, generate, goal_words
from demoforge.execute import runner as runner_mod
from demoforge.execute.problems import STREAMS, episode_seed
from demoforge.tasks import goal_atoms, parse_task
from demoforge.tasks.pddl_text import format_atom, problem_to_pddl
from demoforge.tasks.simulate import Step, apply
from demoforge.tasks.validate import type_of

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
    return sorted(a for a in after - before if a[0] in task.fluent_predicates and a[0] not in IGNORED_IN_GOALS)


def task_with_goal(task, atoms: list[tuple]):
    text = "(and " + " ".join(format_atom(a) for a in atoms) + ")"
    pddl = problem_to_pddl(name=task.name, domain_name=task.domain_name, objects=task.objects, init=task.init,
                           goal=text, requirements=task.index.requirements)
    return parse_task(pddl, domain_text=task.domain_text, problem_file=task.problem_file,
                      domain_file=task.domain_file)


class PlaySlot(runner_mod.ExpertEpisode):
    """An episode slot that, on reaching its goal, samples and pursues the next one."""

    def __init__(self, runner: PlayRunner, i: int):
        self.goals_left = runner.goals - 1
        self.segments: list[dict] = []
        self.goal_start = 0
        start = runner.env.contexts[i].start
        # a fifth child of the episode's seed (after execute's STREAMS): the goals depend only on
        # (run seed, problem, episode), not on which other problems share the runner
        streams = episode_seed(runner.seed, start.problem.name, start.episode).spawn(len(STREAMS) + 1)
        self.goal_rng = np.random.default_rng(streams[-1])
        super().__init__(runner, i)

    def _close_segment(self) -> None:
        ran = sorted({s["operator"] for s in self.executed if s["ticks"][0] >= self.goal_start})
        self.segments.append({"goal": [format_atom(a) for a in goal_atoms(self.task)], "words": goal_words(self.task),
                              "ticks": [self.goal_start, self.rec.length], "operators": ran})
        self.goal_start = self.rec.length

    def _finish_if_goal(self, atoms: frozenset) -> None:
        if self.goals_left > 0 and runner_mod.holds(self.task, self.task.goal, atoms):
            goal = sample_goal(self.task, atoms, self.goal_rng)
            if goal:
                self._close_segment()
                self.goals_left -= 1
                self.task = task_with_goal(self.task, goal)
                self.planner = runner_mod.FallbackPlanner(runner_mod.MimirPlanner(), runner_mod.FastDownwardPlanner())
                self.replans = []
                if self._make_plan(atoms, why=f"play goal {len(self.segments) + 1}"):
                    self._start_step()
                return
        super()._finish_if_goal(atoms)

    def result(self):
        if self.outcome is not None and self.outcome[0]:
            self._close_segment()
        res = super().result()
        words = "; then ".join(s["words"] for s in self.segments) or goal_words(self.task)
        return dataclasses.replace(res, task=words, extra={**res.extra, "play": self.segments})


class PlayRunner(runner_mod.ExpertRunner):
    """ExpertRunner whose episodes chain `goals` goals."""

    def __init__(self, *args, goals: int, seed: int, **kwargs):
        super().__init__(*args, seed=seed, **kwargs)
        self.goals, self.seed = goals, seed

    episode_class = PlaySlot


def generate_play(inputs: list[str | Path], out: str | Path, *, episodes_per_problem: int, goals: int,
                  envs: int = 1, workers: int | str = 1, seed: int = 0, settings: RunnerSettings = RunnerSettings(),
                  domain: str = "blocks", robot=None, progress=None, randomization=None,
                  record_videos=None, control_law: str | None = None, robot_start=None) -> GenerateSummary:
    """Play episodes of every problem into OUT/success and OUT/failure: `generate` (its layout,
    workers, resume, physics randomization, inline videos, control law and robot start, see
    `execute.generate`) with episodes that chain `goals` goals, each allowed `settings.max_episode_s`.
    The goal count is recorded in run.json, so a rerun with another count is refused as another run."""
    if goals < 1:
        raise ExecuteError(f"play: goals {goals} must be >= 1 (the problem's own goal is the first)")
    settings = dataclasses.replace(settings, max_episode_s=settings.max_episode_s * goals)
    return generate(inputs, out, episodes_per_problem=episodes_per_problem, envs=envs, workers=workers, seed=seed,
                    settings=settings, domain=domain, progress=progress, randomization=randomization,
                    record_videos=record_videos, robot=robot, control_law=control_law, robot_start=robot_start,
                    runner=PlayRunner, runner_options={"goals": goals})
