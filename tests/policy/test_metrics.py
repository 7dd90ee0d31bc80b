"""Success, partial success, completion (work done), alive ratio with warm-up excluded, assist semantics
(hand-checked)."""

import pytest

from demoforge.errors import DemoforgeError
from demoforge.policy import Assist, PolicyError, alive_ratio, completion_ratio, partial_success

A, B, C = ("on", "a", "b"), ("on", "b", "c"), ("clear", "a")


def test_partial_success_is_the_fraction_of_goal_atoms_true():
    assert partial_success([A, B], {A, B, C}) == 1.0
    assert partial_success([A, B], {B}) == 0.5
    assert partial_success([A, B], {C}) == 0.0
    assert partial_success([A, B, C], {A, C}) == pytest.approx(2 / 3)
    assert partial_success([], set()) == 1.0


def test_a_policy_that_does_nothing_completes_nothing():
    start = {C, B}  # (on b c) already holds: the goal needs only (on a b)
    assert completion_ratio([A, B], start, start, success=False) == 0.0
    assert completion_ratio([A, B], start, {A, B, C}, success=True) == 1.0
    assert completion_ratio([A, B], set(), {A}, success=False) == 0.5
    assert completion_ratio([A, B], start, {A}, success=False) == 1.0  # the one missing atom was achieved
    # every goal atom held at the start but one was undone: nothing done
    assert completion_ratio([A, B], {A, B}, {A}, success=False) == 0.0


def test_alive_ratio_excludes_the_warm_up():
    # cut after 40 ticks, warm-up 20, horizon 120: (40 - 20) / (120 - 20)
    assert alive_ratio(40, success=False, cut=True, warmup=20, horizon=120) == pytest.approx(0.2)
    assert alive_ratio(15, success=False, cut=True, warmup=20, horizon=120) == 0.0  # died in the warm-up
    assert alive_ratio(120, success=False, cut=True, warmup=20, horizon=120) == 1.0
    assert alive_ratio(30, success=False, cut=False, warmup=20, horizon=120) == 1.0  # alive to the horizon
    assert alive_ratio(5, success=True, cut=False, warmup=20, horizon=120) == 1.0
    # without the warm-up excluded the same cut episode would read 40/120
    assert alive_ratio(40, success=False, cut=True, warmup=0, horizon=120) == pytest.approx(1 / 3)
    with pytest.raises(DemoforgeError, match="horizon"):
        alive_ratio(10, success=False, cut=True, warmup=50, horizon=50)


def test_assist_holds_at_one_then_drops_to_the_floor():
    a = Assist(floor=0.25, steps=3)
    assert [a.value(t) for t in range(6)] == [1.0, 1.0, 1.0, 0.25, 0.25, 0.25]
    assert Assist(floor=0.0, steps=0).value(0) == 0.0
    for bad in (dict(floor=1.5, steps=1), dict(floor=0.5, steps=-1)):
        with pytest.raises(PolicyError):
            Assist(**bad)
