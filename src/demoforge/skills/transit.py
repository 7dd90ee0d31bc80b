"""Collision-free transit between two arm configurations: the straight joint path when it
is free, otherwise a path planned around the obstacle with OMPL (RRT-Connect, then OMPL's
path simplification).

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


def plan_around(
    q0: np.ndarray, q1: np.ndarray, free: Callable[[np.ndarray], bool], limits: np.ndarray, *,
    rng: np.random.Generator, resolution: float, max_iterations: int = MAX_ITERATIONS,
) -> np.ndarray | None:
    """(K, n) joint waypoints [rad] from `q0` to `q1` whose straight segments are free by
    `free(q)` checked every `resolution` [rad] (largest joint step), simplified; None when
    no path was found within `max_iterations`. `limits`: (n, 2) joint ranges [rad]."""
    n = len(q0)
    previous = ou.getLogLevel()
    ou.setLogLevel(ou.LogLevel.LOG_NONE)  # reseeding after the first planner logs an error, harmlessly
    try:
        ou.RNG.setSeed(int(rng.integers(1, 2**31 - 1)))
        space = ob.RealVectorStateSpace(n)
        bounds = ob.RealVectorBounds(n)
        for k in range(n):
            lo, hi = float(limits[k, 0]) + LIMIT_MARGIN, float(limits[k, 1]) - LIMIT_MARGIN
            bounds.setLow(k, min(lo, float(q0[k]), float(q1[k])))
            bounds.setHigh(k, max(hi, float(q0[k]), float(q1[k])))
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
