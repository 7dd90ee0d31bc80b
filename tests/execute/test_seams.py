"""The expert's seams used from outside: a custom goal source, hooks, and the one planner factory."""

import dataclasses

import pytest

from demoforge.errors import DemoforgeError
from demoforge.execute import EpisodeHooks, ExecuteError, ExpertLoop, ExpertSettings, load_problems, run_layout
from demoforge.execute.seams import DEFAULT_PLANNER
from demoforge.tasks import PLANNERS, FallbackPlanner, goal_atoms, make_planner

from .conftest import nudge


class OtherRegion:
    """A goal source: once the block is in its region, move it to the other one."""

    name = "swap"

    def __init__(self):
        self.asked: list[int] = []

    def next_goal(self, episode, state):
        self.asked.append(episode.goal_number)
        if episode.goal_number > 1:
            return None
        (_, block, region), = goal_atoms(episode.task)
        return [("in_region", block, "right" if region == "left" else "left")]


def _run(problems, **kwargs) -> list:
    out = []
    layout = run_layout(problems)
    ExpertLoop(problems, layout, num_envs=1, seed=0, episodes=[(0, 0)], **kwargs).run(out.append)
    return out


def test_a_custom_goal_source_and_hooks_chain_a_second_goal(pnp):
    problems = load_problems(pnp[:1])
    sources, reached, skills, planners = [], [], [], []

    def goal_source(start):  # one source per episode, told which episode it serves
        sources.append((start.problem.name, start.episode, OtherRegion()))
        return sources[-1][2]

    def planner():
        planners.append(1)
        return DEFAULT_PLANNER()

    hooks = EpisodeHooks(
        after_skill=lambda episode, step, attempt: skills.append((episode.slot, step.action, attempt)),
        on_goal_reached=lambda episode, state: reached.append(
            (episode.goal_number, [a for a in goal_atoms(episode.task) if a in state])),
        on_result=lambda episode, result: dataclasses.replace(result, task=f"{result.task} (swapped)"),
    )
    (result,) = _run(problems, goal_source=goal_source, hooks=hooks, planner=planner)
    ((name, episode, source),) = sources
    assert (name, episode) == (problems[0].name, 0)
    (_, block, region), = goal_atoms(problems[0].task)
    other = "right" if region == "left" else "left"
    assert result.success, result.extra["failure"]
    assert reached == [(1, [("in_region", block, region)]), (2, [("in_region", block, other)])]
    assert source.asked == [1, 2]  # asked each time a goal held; the second answer ends the episode
    assert planners == [1, 1]  # one planner at the start, a fresh one for the second goal
    assert [s[1] for s in skills] == ["pick-up", "place-in-region"] * 2 and {s[0] for s in skills} == {0}
    assert [p["operator"] for p in result.extra["plan"]] == ["pick-up", "place-in-region"] * 2
    assert result.extra["goal"] == [f"(in_region {block} {other})"]
    assert result.task.endswith("(swapped)")


def test_the_failure_hook_gets_the_typed_cause(pnp):
    problems = load_problems(pnp[:1])
    failures = []

    def push_out(episode, step, attempt):
        if step.action == "place-in-region":
            nudge(episode.ep.scene, step.args[0], 0.0, -0.2 if step.args[1] == "left" else 0.2)

    hooks = EpisodeHooks(after_skill=push_out, on_failure=lambda episode, cause: failures.append(
        (episode.outcome[1] is cause, cause)))
    (result,) = _run(problems, hooks=hooks, settings=ExpertSettings(max_retries=0, max_replans=0))
    assert not result.success
    ((same, cause),) = failures
    assert same and cause.kind.value == "physics" and cause.skill == "place-in-region"
    assert result.extra["failure"]["kind"] == "physics"


def test_after_skill_is_given_once(pnp):
    problems = load_problems(pnp[:1])
    with pytest.raises(ExecuteError, match="not both"):
        ExpertLoop(problems, run_layout(problems), num_envs=1, seed=0, episodes=[(0, 0)],
                     after_skill=lambda *a: None, hooks=EpisodeHooks(after_skill=lambda *a: None))


def test_the_planner_factory_names_its_backends():
    assert sorted(PLANNERS) == ["fallback", "fast-downward", "pymimir"]
    chain = make_planner()
    assert isinstance(chain, FallbackPlanner) and chain.primary.name == "pymimir"
    assert chain.fallback.name == "fast-downward"
    assert make_planner() is not chain  # a fresh planner (its own cache) per call
    assert make_planner("pymimir", mode="grounded").mode == "grounded"
    assert make_planner("fallback", fallback_budget_s=5.0).fallback_budget_s == 5.0
    with pytest.raises(DemoforgeError, match=r"'nope' is not one of \['fallback', 'fast-downward', 'pymimir'\]"):
        make_planner("nope")
    with pytest.raises(DemoforgeError, match=r"unknown options \['depth'\]; it takes \['mode', 'cache_size'\]"):
        make_planner("pymimir", depth=3)
