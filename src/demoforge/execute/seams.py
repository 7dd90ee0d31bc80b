"""What a caller plugs into the expert's episode (`ExpertEpisode`): its planner, its goal source
and its hooks. Play data chains sampled goals through a goal source and labels its episodes
through hooks; a test injects a disturbance after a skill through a hook.

    class TwoRegions:  # after the problem's goal, the block goes to the other region
        name = "swap"
        def next_goal(self, episode, state):
            return None if episode.goal_number > 1 else [("in_region", "b0", "right")]

    ExpertEpisode(env, slot, problem, layout, settings, goals=TwoRegions(),
                  hooks=EpisodeHooks(on_failure=lambda episode, cause: print(cause.message)))
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from demoforge.tasks import Atom, Step, make_planner

if TYPE_CHECKING:
    from demoforge.execute.expert_episode import EpisodeResult, ExpertEpisode
    from demoforge.execute.vecenv import PddlEpisode
    from demoforge.raw import FailureCause
    from demoforge.tasks import Planner

# A new planner; called at the episode's start and for each next goal (a backend caches the
# problem it loaded, so a fresh one keeps a plan independent of what the episode did before).
PlannerFactory = Callable[[], "Planner"]
DEFAULT_PLANNER: PlannerFactory = functools.partial(make_planner, "fallback")


class GoalSource(Protocol):
    """Where an episode's goals come from. The first goal is the problem's own; each time the
    current goal holds the source is asked for the next one."""

    name: str  # names the planning of a next goal in causes and re-plans ("<name> goal <n>")

    def next_goal(self, episode: ExpertEpisode, state: frozenset[Atom]) -> list[Atom] | None:
        """The atoms of the goal to pursue next from `state`, where the current goal holds; None
        (or no atoms) when the episode's goals are done and it ends as a success."""
        ...


class ProblemGoal:
    """The default goal source: the problem's goal and nothing after it."""

    name = "goal"

    def next_goal(self, episode: ExpertEpisode, state: frozenset[Atom]) -> None:
        return None


# The run-level form of `EpisodeHooks.after_skill` (`generate(after_skill=...)`): (slot, env episode, step, attempt).
AfterSkill = Callable[[int, "PddlEpisode", Step, int], None]


@dataclass(frozen=True)
class EpisodeHooks:
    """Optional callbacks of an episode, each given the episode first (its public state:
    `slot`, `ep` (scene, binding, start), `task`, `executed`, `rec`, `goal_number`, ...)."""

    # after a skill's settle, before its effects are verified: (episode, step, attempt); may move the scene
    after_skill: Callable[[ExpertEpisode, Step, int], None] | None = None
    # the current goal holds in `state`: (episode, state); called before the goal source is asked for the next
    on_goal_reached: Callable[[ExpertEpisode, frozenset[Atom]], None] | None = None
    # the episode failed: (episode, cause); `episode.outcome` is set
    on_failure: Callable[[ExpertEpisode, FailureCause], None] | None = None
    # the finished episode's result for the writer: (episode, result) -> the result to write
    on_result: Callable[[ExpertEpisode, EpisodeResult], EpisodeResult] | None = None


def slot_after_skill(after_skill: AfterSkill) -> Callable[[ExpertEpisode, Step, int], None]:
    """A run-level `AfterSkill` as an `EpisodeHooks.after_skill`."""
    return lambda episode, step, attempt: after_skill(episode.slot, episode.ep, step, attempt)
