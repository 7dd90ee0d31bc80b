"""A roll-out's limits and metric parameters, and the object assist.

Assist (`Assist(floor, steps)`): an upward force of `value(t)` times each free object's
weight, 1.0 (weightless) for the first `steps` ticks, then the `floor` for the rest; the
floor is where it drops to, not where it starts. Recorded per episode; replay applies it
the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from demoforge.policy.protocol import PolicyError


@dataclass(frozen=True)
class Assist:
    """Object assist: `value(t)` = 1.0 for t < steps, then `floor` [fraction of weight]."""

    floor: float  # value after the warm-up, in [0, 1]
    steps: int  # ticks held at 1.0

    def __post_init__(self):
        if not 0.0 <= self.floor <= 1.0 or self.steps < 0:
            raise PolicyError(f"assist: floor {self.floor} must be in [0, 1] and steps {self.steps} >= 0")

    def value(self, tick: int) -> float:
        return 1.0 if tick < self.steps else self.floor


@dataclass(frozen=True)
class RolloutSettings:
    """Episode limits and metric parameters of a roll-out."""

    max_ticks: int = 1200  # an episode is truncated after this many control ticks (20 s: the expert with a replan)
    warmup_ticks: int = 0  # ticks excluded from alive_ratio (defaults to the assist's steps when it is larger)
    reference_ticks: int | None = None  # alive_ratio horizon [ticks]; None = max_ticks
    drop_margin: float = 0.05  # an object's lowest point this far below the table top ends the episode as dropped [m]
    control_hz: float = 60.0  # control and recording rate [Hz]
    assist: Assist | None = None

    @property
    def warmup(self) -> int:
        return max(self.warmup_ticks, self.assist.steps if self.assist else 0)

    @property
    def horizon(self) -> int:
        return self.reference_ticks or self.max_ticks


def free_bodies(model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bodies, z qpos addresses, subtree weights [N]) of the free-jointed objects."""
    joints = np.flatnonzero(model.jnt_type == mujoco.mjtJoint.mjJNT_FREE)
    bodies = model.jnt_bodyid[joints]
    weight = model.body_subtreemass[bodies] * -model.opt.gravity[2]
    return bodies, model.jnt_qposadr[joints] + 2, weight


def apply_assist(scene, assist: Assist | None, tick: int) -> None:
    if assist is None:
        return
    bodies, _, weight = free_bodies(scene.model)
    scene.data.xfrc_applied[bodies, 2] = assist.value(tick) * weight
