"""Play data: goals chained in one scene without resets, recorded as one long episode.

    summary = generate_play(["tasks/stack_three-all-0000.pddl"], "out/play", episodes_per_problem=2,
                            goals=3, seed=0)

Each episode starts like an execute episode (same start states and seeds) and runs the
expert to the problem's goal; then a next goal is sampled from the reached symbolic state
(a seeded random walk of `PLAY_OPERATORS` from it, ending hand-empty; the goal is the
walk's new atoms), planned from where the scene is and executed, `goals` times in all. The
episode's `plan` extra lists every executed step (so `annotate` gives a goal.action that
changes over time) and the `play` extra lists each goal with its tick range. An episode
that fails a goal ends there and goes to the failure split with the goals it reached.

This builds on the expert's episode (`demoforge.execute.ExpertEpisode`, subclassed) and
generate's item runner and shard merge (`run_item`, `ShardMerge`). Play runs in one
process; an interrupted run continues from its finished episodes.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import numpy as np

from demoforge.errors import PlanningError
from demoforge.execute import ExecuteError, GenerateSummary, RunnerSettings, goal_words
from demoforge.execute import runner as runner_mod
from demoforge.execute.generate import (RunSpec, ShardMerge, _run_record, finished_run, open_run_folder, run_item,
                                       run_problems)
from demoforge.execute.problems import STREAMS, episode_seed
from demoforge.execute.record import run_layout
from demoforge.tasks import goal_atoms, parse_task
from demoforge.tasks.pddl_text import format_atom, problem_to_pddl
from demoforge.tasks.simulate import Step, apply
from demoforge.tasks.validate import type_of

PLAY_OPERATORS = ("pick-up", "put-down", "stack", "unstack")  # what the random walk may use
IGNORED_IN_GOALS = ("hand_empty", "holding", "clear")  # implied by the placement atoms
WALK_STEPS = 6  # random-walk length before a goal is read off [steps]


def ground_steps(task, state: frozenset) -> list[Step]:
    """Every applicable step of a `PLAY_OPERATORS` operator in `state`, sorted."""
    out = []
    for name in sorted(task.index.actions):
        if name not in PLAY_OPERATORS:
            continue
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


def sample_goal(task, state: frozenset, rng: np.random.Generator) -> list[tuple]:
    """Atoms of a state a seeded random walk reaches from `state` that do not hold now
    (fluent placement atoms only); [] when no walk finds one."""
    for _ in range(8):
        s = state
        for _ in range(WALK_STEPS):
            steps = ground_steps(task, s)
            if not steps:
                break
            s = apply(task, s, steps[int(rng.integers(len(steps)))])
        if any(a[0] == "holding" for a in s):
            steps = [st for st in ground_steps(task, s) if st.action in ("put-down", "stack")]
            if not steps:
                continue
            s = apply(task, s, steps[int(rng.integers(len(steps)))])
        new = sorted(a for a in s - state if a[0] in task.fluent_predicates and a[0] not in IGNORED_IN_GOALS)
        if new:
            return new
    return []


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
        self.segments.append({"goal": [format_atom(a) for a in goal_atoms(self.task)], "words": goal_words(self.task),
                              "ticks": [self.goal_start, self.rec.length]})
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
                  envs: int = 1, seed: int = 0, settings: RunnerSettings = RunnerSettings(),
                  domain: str = "blocks", robot=None, robot_start=None) -> GenerateSummary:
    """Play episodes of every problem into OUT/success and OUT/failure (generate's layout), with
    the arm of `robot` (a RobotCard; None: the built-in Panda, see `execute.load_problems`) starting
    as `robot_start` (RobotStartParams) draws, for PDDL inputs.

    Like `generate`, each finished episode is durable in its problem's shard at once, and a
    rerun with the same arguments continues a killed run where it stopped."""
    if goals < 1 or episodes_per_problem < 1 or envs < 1:
        raise ExecuteError(f"play: goals {goals}, episodes {episodes_per_problem}, envs {envs} must all be >= 1")
    inputs, out = [str(p) for p in inputs], Path(out)
    problems = run_problems(inputs, domain=domain, randomization=None, robot=robot, robot_start=robot_start)
    layout = run_layout(problems, fps=round(settings.control_hz))
    settings = dataclasses.replace(settings, max_episode_s=settings.max_episode_s * goals)
    record = {**_run_record(inputs, problems, episodes_per_problem, seed, settings, None), "play_goals": goals}
    if (done := finished_run(out, record, problems)) is not None:
        return done  # the same run, finished: nothing to do
    open_run_folder(out, record)
    run = RunSpec(out, tuple(problems), layout, episodes_per_problem, seed, envs, settings)
    with ShardMerge(out, problems, layout, record) as merge:
        for k in range(len(problems)):
            run_item(run, k, runner=PlayRunner, goals=goals)
            merge.feed()
        return merge.finish()
