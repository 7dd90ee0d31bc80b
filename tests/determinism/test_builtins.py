"""Every built-in plug-in passes the determinism checker: all task families (with reset-state
sampling), all skills in SKILLS, all planners in PLANNERS, and the policies that need no weights."""

from __future__ import annotations

import importlib.util

import pytest

from demoforge.determinism import check_planner, check_policy, check_skill, check_task_family
from demoforge.policy import ExpertPolicy, RolloutSettings, rollout
from demoforge.skills import SKILLS
from demoforge.tasks import FAMILIES, PLANNERS, generate_family, write_tasks
from tests.skills.conftest import cube, make, run

REGION = (0.40, 0.55, 0.15, 0.28)  # table rectangle of the place-in-region fixture (world) [m]


@pytest.fixture(scope="module")
def pnp(tmp_path_factory):
    paths = write_tasks(generate_family("pnp", count=1, seed=11), tmp_path_factory.mktemp("pnp"))
    return next(p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_task_family_and_its_reset_states_are_deterministic(family):
    report = check_task_family(family, count=2, seed=3, other_seed=4, require_seed_effect=True)
    assert report.warnings == ()
    assert any(p.startswith("reset state of") and "identical" in p for p in report.passed)
    assert report.runs == 6  # family 3 times, reset sampler 3 times


def _scene(*, held: str | None = None):
    """A fixture: a fresh settled scene with cubes a, b and region `left`; `held` picked up first."""
    def fixture():
        scene, ctx = make(cube("a", 0.5, -0.1), cube("b", 0.45, 0.12), regions={"left": REGION})
        if held is not None:
            run(scene, ctx, "pick-up", [held], seed=5)
        return ctx
    return fixture


def _tower():
    scene, ctx = make(cube("b", 0.5, 0.0), cube("a", 0.5, 0.0, level=1))
    return ctx


SKILL_CASES = {  # operator -> (fixture, args)
    "pick-up": (_scene(), ["a"]),
    "unstack": (_tower, ["a", "b"]),
    "put-down": (_scene(held="a"), ["a"]),
    "stack": (_scene(held="a"), ["a", "b"]),
    "flip": (_scene(), ["a", "pz", "py"]),
    "rotate": (_scene(), ["a", "yaw0", "yaw270"]),
    "place-in-region": (_scene(held="a"), ["a", "left"]),
}


def test_every_skill_has_a_case():
    assert set(SKILL_CASES) == set(SKILLS)


@pytest.mark.parametrize("operator", sorted(SKILL_CASES))
def test_every_skill_is_deterministic_and_draws_from_its_generator(operator):
    fixture, args = SKILL_CASES[operator]
    report = check_skill(operator, fixture, args, seed=0, other_seed=1, require_seed_effect=True)
    assert report.warnings == () and report.runs == 3  # no warning: every plan succeeded
    assert "leaves the live scene (ctx.data, ctx.model) unchanged" in report.passed


def _installed(name: str) -> bool:
    return name == "pymimir" or importlib.util.find_spec("up_fast_downward") is not None


@pytest.mark.parametrize("planner", sorted(PLANNERS))
def test_every_planner_is_deterministic(planner, pnp):
    if not _installed(planner):
        pytest.skip(f"{planner} needs up-fast-downward (demoforge[fd])")
    report = check_planner(planner, pnp)
    assert "a second call on the same planner object gives the same result" in report.passed
    assert report.runs == 3


def test_the_expert_and_scripted_policies_are_deterministic(pnp):
    for spec in ("expert", "tests.policy.scripted:hold"):
        report = check_policy(spec, pnp, max_ticks=40)
        assert "act() never writes into its observations" in report.passed, spec
        assert report.runs == 2


def test_the_replay_policy_is_deterministic(pnp, tmp_path):
    rollout(ExpertPolicy(), [pnp], tmp_path / "src", episodes=1, seed=0, settings=RolloutSettings(max_ticks=40))
    report = check_policy(f"replay:{tmp_path / 'src' / 'dataset'}", pnp, max_ticks=40)
    assert report.runs == 2
