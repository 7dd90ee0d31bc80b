"""The checker catches what it is for: global random state, the clock, ignored seeds, written
inputs; and it names the plug-in, the first difference and the fix."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

from demoforge.determinism import (
    DeterminismError, DeterminismWarning, check_planner, check_policy, check_skill, check_task_family,
    first_difference,
)
from demoforge.errors import DemoforgeError
from demoforge.skills import pick
from demoforge.tasks import FallbackPlanner, generate_family, make_planner, write_tasks
from tests.policy.scripted import Hold
from tests.skills.conftest import cube, make


@pytest.fixture(scope="module")
def pnp(tmp_path_factory):
    paths = write_tasks(generate_family("pnp", count=1, seed=11), tmp_path_factory.mktemp("pnp"))
    return next(p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl")


def _ctx():
    return make(cube("a", 0.5, 0.0), cube("b", 0.45, 0.15))[1]


def test_a_family_drawing_from_np_random_is_caught_and_the_global_state_restored():
    def noisy(*, count, seed):
        tasks = generate_family("pnp", count=count, seed=seed)
        return tasks[: 1 + int(np.random.rand() > 2)]  # consumes the global generator, changes nothing

    random.seed(7)
    np.random.seed(7)
    state = np.random.get_state()
    with pytest.raises(DeterminismError, match=r"task family noisy: it consumed NumPy's global `np.random` state.*"
                                               r"Fix: draw every random choice from the numpy.random.Generator"):
        check_task_family(noisy)
    assert first_difference(np.random.get_state(), state) is None  # the check put it back
    assert issubclass(DeterminismError, DemoforgeError)


def test_a_family_reading_the_global_state_without_consuming_it_is_caught():
    def peeking(*, count, seed):
        return generate_family("pnp", count=count, seed=seed + int(np.random.get_state()[1][0]))  # the global seed

    np.random.seed(1)  # another global seed than the checker's reseed
    with pytest.raises(DeterminismError, match="depends on the global random state.*after reseeding"):
        check_task_family(peeking)


def test_a_skill_reading_the_clock_names_the_first_differing_key():
    def clocked(b, args, params):
        params["started_ns"] = time.perf_counter_ns()
        return pick.pick_up(b, args, params)

    with pytest.raises(DeterminismError, match=r"skill body clocked on \['a'\]: two runs from seed 0 in fresh "
                                               r"objects differ: output\['params'\]\['started_ns'\]"):
        check_skill(clocked, _ctx, ["a"])


def test_a_skill_writing_into_the_live_state_is_caught():
    def pushy(b, args, params):
        b.ctx.data.qpos[0] += 0.1
        return pick.pick_up(b, args, params)

    with pytest.raises(DeterminismError, match=r"changed its input the live scene.*\['data \(integration state\)'\]"
                                               r".*Fix: work on a copy"):
        check_skill(pushy, _ctx, ["a"])


def test_a_skill_that_ignores_its_generator_is_a_warning_or_an_error_when_required():
    def fixed(b, args, params):
        return pick.pick_up(b.__class__(b.ctx, np.random.default_rng(0)), args, params)

    with pytest.warns(DeterminismWarning, match="seeds 0 and 1 give identical outputs"):
        report = check_skill(fixed, _ctx, ["a"])
    assert report.warnings and "ignores the seed" in report.warnings[0]
    with pytest.raises(DeterminismError, match="ignores the seed.*Fix: derive"):
        check_skill(fixed, _ctx, ["a"], require_seed_effect=True)


class Jittery(Hold):
    """Hold with noise from an unseeded generator: differs from run to run."""

    def act(self, observations):
        a = super().act(observations)
        a[:, :-1] += np.random.default_rng().normal(0.0, 1e-6, size=a[:, :-1].shape)
        return a


class Scribbler(Hold):
    def act(self, observations):
        observations["observation.state"][:] = 0.0
        return super().act(observations)


class Noisy(Hold):
    def act(self, observations):
        return super().act(observations) + np.random.rand() * 0.0  # adds nothing, consumes the global generator


def test_policies_drawing_unseeded_or_global_noise_or_writing_observations_are_caught(pnp):
    with pytest.raises(DeterminismError, match=r"policy Jittery: two runs from seed 0 in fresh objects differ: "
                                               r"output\['actions'\]\[0\]\[0, 0\]"):
        check_policy(Jittery, pnp, max_ticks=5)
    with pytest.raises(DeterminismError, match="policy Noisy: it consumed NumPy's global"):
        check_policy(Noisy, pnp, max_ticks=5)
    with pytest.raises(DeterminismError, match=r"act\(\) wrote into its observations at tick 0: "
                                               r"observations\['observation.state'\]\[0, 0\]"):
        check_policy(Scribbler, pnp, max_ticks=5)
    with pytest.raises(DeterminismError, match="needs a factory.*lambda: MyPolicy"):
        check_policy(Hold(), pnp)


def test_a_planner_shuffling_with_python_random_is_caught(pnp):
    class Shuffled:
        name = "shuffled"

        def plan(self, task, *, state=None, time_budget_s):
            random.random()
            return make_planner("pymimir").plan(task, state=state, time_budget_s=time_budget_s)

    with pytest.raises(DeterminismError, match="planner Shuffled on pnp-all-0000: it consumed Python's `random`"):
        check_planner(Shuffled, pnp)
    with pytest.raises(DeterminismError, match="needs a factory"):
        check_planner(make_planner("pymimir"), pnp)
    with pytest.raises(DeterminismError, match="timed out.*raise time_budget_s"):
        check_planner(lambda: FallbackPlanner(make_planner("pymimir"), make_planner("pymimir"), 0.0), pnp,
                      time_budget_s=0.0)


def test_first_difference_compares_bits_and_names_the_place():
    a = np.zeros((2, 3))
    b = a.copy()
    b[1, 2] = 1e-300
    assert first_difference(a, b) == "output[1, 2]: 0.0 vs 1e-300"
    assert first_difference(np.array([0.0]), np.array([-0.0])) == "output[0]: 0.0 vs -0.0"  # == says equal
    assert first_difference([np.nan], [np.nan]) is None and first_difference(np.array([np.nan]), np.array([np.nan])) \
        is None
    assert first_difference({"x": [1, (2, 3)]}, {"x": [1, (2, 4)]}) == "output['x'][1][1]: 3 vs 4"
    assert "keys only in the first run ['y']" in first_difference({"x": 1, "y": 2}, {"x": 1})
    assert first_difference(np.zeros(2, np.float32), np.zeros(2)) == \
        "output: shape/dtype (2,) float32 vs (2,) float64"
