"""Executing actions of a baked convention on the native-rate controller.

A policy trained on a baked dataset acts at the bake's rate under its convention (see
`demoforge.convert.conventions`); `ActionConvention.targets` turns one such action into the
native ticks' joint targets and gripper commands, the inverse of the projection:

- `joint_target` (and `raw_cmd` under a joint-position law): the targets in force at the
  decision tick, held for the `stride` native ticks until the next action;
- `joint_pos`: the achieved q wanted one output tick later; the targets ramp linearly from
  the q measured now to it over the stride;
- `joint_vel`: (q(t + 1/rate) - q(t)) * rate [rad/s]; the targets ramp q(t) + v * k / native
  for k = 1..stride.

The gripper component is a closedness, commanded as given over the stride; values outside
[0, 1] are clipped (the controller's range; joint_target labels are already in it). Under
joint_pos / joint_vel the labels are the achieved closedness, which on a held block is
below 1: commanding it holds the fingers where they are.

`from_bake(root)` reads the convention and rates from a baked dataset's meta/bake.json, so
an env or a roll-out acts exactly as that dataset's labels were projected.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from demoforge.convert.stamp import BAKE_PATH, read_stamp
from demoforge.errors import DemoforgeError
from demoforge.sim import ControlLaw

EXECUTABLE = ("joint_target", "joint_pos", "joint_vel", "raw_cmd")
BAKE_JSON = BAKE_PATH  # the stamp's path (its owner: demoforge.convert.stamp)


@dataclass(frozen=True)
class ActionConvention:
    """What an action means and how often one comes."""

    convention: str = "joint_target"  # one of EXECUTABLE
    control_freq: int = 60  # actions per second [Hz]
    native_freq: int = 60  # controller ticks per second [Hz]; a multiple of control_freq
    law: dict | None = None  # the dataset's control law (ControlLaw fields); None = the robot card's

    def __post_init__(self):
        problems = []
        if self.convention not in EXECUTABLE:
            problems.append(f"convention {self.convention!r} is not executable; choose one of {list(EXECUTABLE)}")
        if not isinstance(self.control_freq, int) or not isinstance(self.native_freq, int) \
                or self.control_freq < 1 or self.native_freq % self.control_freq:
            valid = [r for r in range(self.native_freq, 0, -1) if self.native_freq % r == 0] \
                if isinstance(self.native_freq, int) and self.native_freq > 0 else []
            problems.append(f"control_freq {self.control_freq!r} must divide the native rate {self.native_freq!r} "
                            f"Hz; valid rates: {valid}")
        if self.convention == "raw_cmd" and (self.law or {}).get("mode", "joint_position") != "joint_position":
            problems.append(f"raw_cmd under a {self.law.get('mode')!r} law is not joint targets; bake joint_target")
        if problems:
            raise DemoforgeError("action convention:\n  " + "\n  ".join(problems))

    @property
    def stride(self) -> int:
        """Native ticks per action."""
        return self.native_freq // self.control_freq

    def joint_law(self, card_law: ControlLaw) -> ControlLaw:
        """The joint-position law the targets are applied with (the dataset's gains when known)."""
        if self.law is None:
            return replace(card_law, mode="joint_position", scales=())
        return replace(ControlLaw.from_dict(self.law, where=BAKE_JSON), mode="joint_position", scales=())

    def targets(self, action: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """((stride, n_arm) joint targets [rad], (stride,) gripper closedness) for one action
        [arm..., gripper] taken with the arm at `q` [rad]."""
        action = np.asarray(action, dtype=np.float64)
        arm, grip = action[:-1], float(np.clip(action[-1], 0.0, 1.0))
        n = self.stride
        frac = np.arange(1, n + 1)[:, None] / n
        if self.convention in ("joint_target", "raw_cmd"):
            arm_t = np.repeat(arm[None], n, axis=0)
        elif self.convention == "joint_pos":
            arm_t = q + (arm - q) * frac
        else:  # joint_vel: the finite difference over one output tick
            arm_t = q + arm * frac / self.control_freq
        return arm_t, np.full(n, grip)

    def to_json(self) -> dict:
        return {"convention": self.convention, "control_freq": self.control_freq, "native_freq": self.native_freq,
                "law": self.law}


def from_bake(root: str | Path) -> ActionConvention:
    """The convention a baked dataset's labels follow (its meta/bake.json)."""
    stamp = read_stamp(root, why="--like / --env.dataset")
    return ActionConvention(stamp.convention, stamp.control_freq, stamp.native_freq, stamp.control_law)


def environment_state_kind(root: str | Path) -> str | None:
    """The kind of observation.environment_state a baked dataset holds (`demoforge.raw.envstate.
    KINDS`; a bake.json from before kinds holds object poses), or None when it holds none."""
    return read_stamp(root).environment_state_kind

