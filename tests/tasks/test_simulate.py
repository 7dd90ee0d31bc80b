"""The symbolic simulator: negative preconditions, equality, universal and conditional
effects, and plans that must be rejected."""

import pytest

from demoforge.errors import PlanningError
from demoforge.tasks import Step, apply, holds, parse_task, run_plan

LAMPS = """(define (domain lamps)
  (:requirements :strips :typing :negative-preconditions :conditional-effects)
  (:types lamp)
  (:predicates (lit ?l - lamp) (linked ?a - lamp ?b - lamp))
  (:action toggle-on
    :parameters (?l - lamp)
    :precondition (not (lit ?l))
    :effect (and (lit ?l)
                 (forall (?m - lamp) (when (linked ?l ?m) (not (lit ?m)))))))
"""
LAMP_PROBLEM = """(define (problem two) (:domain lamps)
  (:objects a b c - lamp)
  (:init (lit b) (lit c) (linked a b))
  (:goal (and (lit a) (lit c))))
"""


def test_conditional_and_universal_effects_and_negative_preconditions():
    task = parse_task(LAMP_PROBLEM, domain_text=LAMPS)
    state = apply(task, frozenset(task.init), Step("toggle-on", ("a",)))
    assert ("lit", "a") in state and ("lit", "b") not in state and ("lit", "c") in state
    with pytest.raises(PlanningError, match="not applicable"):
        apply(task, state, Step("toggle-on", ("a",)))
    assert run_plan(task, [Step("toggle-on", ("a",))]) == state


def test_pick_up_leaves_every_region_and_stack_needs_two_blocks(tower_task):
    task = tower_task
    state = frozenset(task.init)
    for step in [Step("unstack", ("a", "b")), Step("place-in-region", ("a", "left"))]:
        state = apply(task, state, step)
    assert ("in_region", "a", "left") in state
    state = apply(task, state, Step("pick-up", ("a",)))
    assert not any(atom[0] == "in_region" for atom in state)
    with pytest.raises(PlanningError, match="not applicable"):
        apply(task, state, Step("stack", ("a", "a")))


def test_flip_follows_face_adjacency(tower_task):
    task = tower_task
    state = frozenset(task.init)
    with pytest.raises(PlanningError, match="not applicable"):
        apply(task, state, Step("flip", ("b", "pz", "px")))  # b is under a, not on the table
    for step in [Step("unstack", ("a", "b")), Step("put-down", ("a",)), Step("unstack", ("b", "c")),
                 Step("put-down", ("b",))]:
        state = apply(task, state, step)
    with pytest.raises(PlanningError, match="not applicable"):
        apply(task, state, Step("flip", ("b", "pz", "nz")))  # opposite face: needs two tips
    state = apply(task, apply(task, state, Step("flip", ("b", "pz", "px"))), Step("flip", ("b", "px", "nz")))
    assert ("face_up", "b", "nz") in state and ("face_up", "b", "pz") not in state


@pytest.mark.parametrize(
    ("plan", "expected"),
    [
        ([Step("pick-up", ("c",))], r"fails at step 0: step \(pick-up c\) is not applicable"),
        ([Step("unstack", ("a", "b"))], r"ends without reaching the goal"),
        ([Step("jump", ("a",))], r"unknown action 'jump'; the domain has: flip, pick-up"),
        ([Step("unstack", ("a",))], r"unstack takes 2 argument\(s\), got 1"),
        ([Step("unstack", ("a", "left"))], r"argument 'left' is not a declared block"),
    ],
)
def test_bad_plans_are_rejected_with_the_step(tower_task, plan, expected):
    with pytest.raises(PlanningError, match=expected):
        run_plan(tower_task, plan)


def test_goal_evaluation(tower_task):
    assert not holds(tower_task, tower_task.goal, frozenset(tower_task.init))
