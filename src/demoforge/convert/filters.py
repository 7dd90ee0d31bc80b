"""Episode and tick filters: outcome selection and idle-tick removal.

A tick is dead when nothing happens and nothing is intended: the robot is static, every
object is static, and the command holds the achieved pose. A sustained offset between
command and achieved pose (pressing on a block, squeezing) is intent and is kept. Of
each run of dead ticks the first is kept, so the policy still sees "stay here".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from demoforge.convert.episode import BakeError, Episode


@dataclass(frozen=True)
class IdleFilter:
    """Tolerances of the dead-tick test, between consecutive output ticks."""

    q_tol: float = 1e-4  # largest arm joint change still "static" [rad]
    gripper_tol: float = 1e-3  # largest gripper closedness change still "static" [-]
    object_tol: float = 1e-5  # largest change of any free object's position [m] / quaternion entry still "static"
    intent_tol: float = 1e-2  # command - achieved offset above this is intent [rad] / closedness [-]

    def to_json(self) -> dict[str, float]:
        return asdict(self)


def wanted_outcome(outcome: str | None, include_failures: bool, *, where: str) -> bool:
    """Successes always; failures only when asked. An episode whose source records no outcome is kept."""
    if outcome is None or outcome == "success":
        return True
    if outcome == "failure":
        return include_failures
    raise BakeError(f"{where}: outcome {outcome!r} is not 'success' or 'failure'")


def dead_ticks(ep: Episode, ticks: np.ndarray, cfg: IdleFilter = IdleFilter()) -> np.ndarray:
    """(N,) bool: output tick i is dead (nothing moves from tick i to i+1, no intent). The last is never dead."""
    if ep.objects is None or ep.target is None or ep.target_gripper is None:
        raise BakeError(
            f"{ep.source}: episode {ep.index}: --filter-idle needs the objects' poses (read_episode(objects=True) "
            f"from the physics state) and the commanded targets, which a {ep.reader!r} source does not give; "
            "bake it without --filter-idle"
        )
    dead = np.zeros(ticks.shape[0], dtype=bool)
    if ticks.shape[0] < 2:
        return dead
    a, b = ticks[:-1], ticks[1:]
    robot_static = (np.abs(ep.q[b] - ep.q[a]).max(axis=1) <= cfg.q_tol) & (
        np.abs(ep.gripper[b] - ep.gripper[a]) <= cfg.gripper_tol)
    scene_static = np.abs(ep.objects[b] - ep.objects[a]).max(axis=1, initial=0.0) <= cfg.object_tol
    no_intent = (np.abs(ep.target[a] - ep.q[a]).max(axis=1) <= cfg.intent_tol) & (
        np.abs(ep.target_gripper[a] - ep.gripper[a]) <= cfg.intent_tol)
    dead[:-1] = robot_static & scene_static & no_intent
    return dead


def keep_mask(dead: np.ndarray) -> np.ndarray:
    """Drop dead ticks except the first of each run of them."""
    first_of_run = dead & ~np.concatenate([[False], dead[:-1]])
    return ~dead | first_of_run
