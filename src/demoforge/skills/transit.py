"""Collision-free transit between two arm configurations: the straight joint path when it
is free, otherwise a path planned around the obstacle with OMPL (RRT-Connect, then OMPL's
path simplification). The planner first searches a box of joint space around the two
configurations (`LOCAL_PAD` beyond their range on each joint): a detour found there stays
close to the direct path, where one sampled from the whole joint range wanders even after
simplification (measured: 5-6 rad of travel for a 0.9-2 rad move); only when the box holds
no path is the whole range searched.

Determinism: OMPL's random numbers are seeded per call from the caller's Generator
(`ompl.util.RNG.setSeed` before any OMPL object is made, and single-threaded planners),
and planning ends when an exact solution is found or after `max_iterations` planner
iterations, never on a clock, so a plan does not depend on machine speed or load.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from ompl import base as ob
from ompl import geometric as og
from ompl import util as ou

log = logging.getLogger(__name__)

MAX_ITERATIONS = 4000  # RRT-Connect iterations before the planner gives up [-]
LIMIT_MARGIN = 0.01  # planned configurations stay this far inside the joint limits [rad]
LOCAL_PAD = 0.5  # the first search's box: each joint's range between the ends, widened by this [rad]


def plan_around(
    q0: np.ndarray, q1: np.ndarray, free: Callable[[np.ndarray], bool], limits: np.ndarray, *,
    rng: np.random.Generator, resolution: float, max_iterations: int = MAX_ITERATIONS,
) -> np.ndarray | None:
    """(K, n) joint waypoints [rad] from `q0` to `q1` whose straight segments are free by
    `free(q)` checked every `resolution` [rad] (largest joint step), simplified; None when
    no path was found within `max_iterations` in the box around the ends nor in the whole
    joint range. `limits`: (n, 2) joint ranges [rad]."""
    lo = np.maximum(limits[:, 0] + LIMIT_MARGIN, np.minimum(q0, q1) - LOCAL_PAD)
    hi = np.minimum(limits[:, 1] - LIMIT_MARGIN, np.maximum(q0, q1) + LOCAL_PAD)
    boxes = (np.column_stack([lo, hi]), limits + [LIMIT_MARGIN, -LIMIT_MARGIN])
    if not (free(q0) and free(q1)):
        # No path ends in a configuration that is not free. Asked anyway, RRT-Connect waits for a
        # valid goal state, sleeping 10 ms per termination check: about 40 s at MAX_ITERATIONS for
        # nothing. The searches' seeds are drawn all the same, so later plans do not change.
        for _ in boxes:
            rng.integers(1, 2**31 - 1)
        return None
    for box in boxes:
        path = _plan(q0, q1, free, box, rng=rng, resolution=resolution, max_iterations=max_iterations)
        if path is not None:
            return path
    return None


def _plan(q0: np.ndarray, q1: np.ndarray, free: Callable[[np.ndarray], bool], box: np.ndarray, *,
          rng: np.random.Generator, resolution: float, max_iterations: int) -> np.ndarray | None:
    """One RRT-Connect search inside `box` ((n, 2) joint bounds [rad], widened to hold the ends)."""
    n = len(q0)
    previous = ou.getLogLevel()
    ou.setLogLevel(ou.LogLevel.LOG_NONE)  # reseeding after the first planner logs an error, harmlessly
    try:
        ou.RNG.setSeed(int(rng.integers(1, 2**31 - 1)))
        space = ob.RealVectorStateSpace(n)
        bounds = ob.RealVectorBounds(n)
        for k in range(n):
            bounds.setLow(k, min(float(box[k, 0]), float(q0[k]), float(q1[k])))
            bounds.setHigh(k, max(float(box[k, 1]), float(q0[k]), float(q1[k])))
        space.setBounds(bounds)
        # OMPL checks motions every fraction of the space's extent (L2); a step of
        # `resolution` in L2 bounds the largest joint step by it too.
        space.setLongestValidSegmentFraction(resolution / space.getMaximumExtent())
        setup = og.SimpleSetup(space)
        setup.setStateValidityChecker(lambda s: bool(free(np.array([s[k] for k in range(n)]))))
        start, goal = space.allocState(), space.allocState()
        for k in range(n):
            start[k], goal[k] = float(q0[k]), float(q1[k])
        setup.setStartAndGoalStates(start, goal)
        setup.setPlanner(og.RRTConnect(setup.getSpaceInformation()))
        iterations = [0]

        def spent() -> bool:
            iterations[0] += 1
            return iterations[0] > max_iterations

        done = ob.plannerOrTerminationCondition(
            ob.exactSolnPlannerTerminationCondition(setup.getProblemDefinition()), ob.PlannerTerminationCondition(spent))
        setup.solve(done)
        if not setup.haveExactSolutionPath():
            return None
        setup.simplifySolution()  # shortcutting and vertex reduction; bounded, no clock
        path = setup.getSolutionPath()
        out = np.array([[path.getState(i)[k] for k in range(n)] for i in range(path.getStateCount())])
    finally:
        ou.setLogLevel(previous)
    out[0], out[-1] = q0, q1
    log.debug("planned around an obstacle in %d iterations: %d waypoints", iterations[0], len(out))
    return out
