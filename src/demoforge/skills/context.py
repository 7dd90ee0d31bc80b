"""What a skill is given and what it returns.

A skill plans without stepping anything: from the state at the moment it starts (a
`SkillContext`), the operator's arguments and a Generator, it computes the whole
open-loop command sequence at the control rate as a `SkillPlan` (joint targets, gripper
command and a phase label per tick). Nothing is stepped while planning, so a runner can
plan for N environments and then step them in lockstep, gathering tick `k` of each plan.
Infeasibility (no IK solution, a colliding path, a plan longer than the budget) comes
back as a structured `SkillFailure` in the plan, never as an exception; bad arguments
(an unknown block, a face name that does not exist) are caller errors and raise SkillError.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import mujoco
import numpy as np

from demoforge.errors import DemoforgeError
from demoforge.sim import RobotIndex
from demoforge.skills.timing import PROFILES, MotionProfile

# Low-level phase labels shared by every skill; a plan's `phase` holds indices into this.
PHASES = ("approach", "descend", "close", "lift", "carry", "reorient", "lower", "open", "retreat")
# Failure kinds a skill can report; "precondition": the simulated state contradicts the
# operator's (e.g. the face to tip onto points up). The runner adds "planning" and "physics".
FAILURE_KINDS = ("ik", "collision", "timeout", "precondition")

Rect = tuple[float, float, float, float]  # (x_lo, x_hi, y_lo, y_hi) in the world frame [m]


class SkillError(DemoforgeError):
    """A skill was called with arguments that cannot name anything in the scene."""


PUT_DOWN_SPOTS = ("uniform", "nearest")  # SkillSettings.put_down_spot
FLIP_MODES = ("topple", "in_hand")  # SkillSettings.flip_mode


@dataclass(frozen=True)
class SkillSettings:
    """Tunable constants of every skill; the defaults are the ones the tests measure."""

    profile: MotionProfile = PROFILES["medium"]  # fractions of the robot card's joint velocity/acceleration/jerk limits
    control_hz: float = 60.0  # command rate [Hz]
    approach_height: float = 0.05  # pre-grasp TCP height above the grasp [m]
    # Rise of the open hand after a release [m]: 3 cm frees the fingers from the block (the
    # next transit is checked against it); 5 cm cost every placement ~0.1 rad more joint travel
    # (benchmarks/bench_motion.py, tenth round), 2 cm made stack_three retry 9 attempts in 160.
    retreat_height: float = 0.03
    # Held block's bottom above the tallest other prop while carried, and the least straight
    # lowering of a placement [m]: 3 cm (was 5) clears every prop, the path checks do the rest.
    carry_clearance: float = 0.03
    close_s: float = 0.5  # gripper closing time, arm still [s]
    open_s: float = 0.3  # gripper opening time, arm still [s]
    settle_s: float = 0.1  # arm still after each rest-to-rest lowering, before the gripper moves [s]
    grasp_z_offset: tuple[float, float] = (-0.003, 0.005)  # grasp point above the block centre [m]
    grasp_xy_offset: float = 0.002  # grasp point offset from the centre along either face axis, at most [m]
    place_xy_offset: float = 0.003  # placement offset from the target centre, at most [m]
    place_gap: float = 0.003  # block bottom above its support when released [m]
    free_spot_margin: float = 0.03  # clearance between a put-down block and other props [m]
    free_spot_tries: int = 200  # rejection-sampling budget for a free table spot
    place_tries: int = 5  # free spots tried when the arm cannot serve one (IK, collision)
    # Where put-down sets a block (`PUT_DOWN_SPOTS`): "uniform" draws a free spot uniformly from the
    # workspace (varied demos); "nearest" takes the first free one of a fixed scan around where the
    # block was picked (`nearest_spots`), one spot per scene, so a policy trained on the demos is not
    # asked to average spots all around the table into the tower it started from.
    put_down_spot: str = "uniform"
    # How flip tips a block (`FLIP_MODES`, demoforge.skills.flip): "topple" pushes it over where it
    # has room to land and turns it in the hand elsewhere; "in_hand" always turns it in the hand, a
    # longer motion whose demos, replayed with their joint targets a few millimetres off, still
    # succeed where a topple's fail (benchmarks/bench_precision.py).
    flip_mode: str = "topple"
    max_s: float = 30.0  # longest plan accepted [s]; longer is a "timeout" failure
    collision_step: float = 0.05  # joint step of the path collision check [rad]
    # A transit keeps the robot this far from the scene where its ends leave room [m]: under
    # the position servos the fingers run 1-3 mm off the commanded path, and paths planned to
    # graze the top of a tower just built toppled it (bench_motion, fourteenth round: 5 mm
    # cost more detours, up to 0.06 rad more median travel, for about as many retries).
    transit_padding: float = 0.003

    def __post_init__(self):
        problems = [f"{name} must be > 0, got {getattr(self, name)}" for name in (
            "control_hz", "approach_height", "retreat_height", "close_s", "open_s", "max_s", "collision_step",
            "free_spot_tries", "place_tries") if not getattr(self, name) > 0]
        problems += [f"{name} must be >= 0, got {getattr(self, name)}" for name in (
            "carry_clearance", "settle_s", "grasp_xy_offset", "place_xy_offset", "place_gap",
            "free_spot_margin", "transit_padding") if not getattr(self, name) >= 0]
        problems += choice_problems(self.put_down_spot, self.flip_mode)
        lo, hi = self.grasp_z_offset
        if lo > hi:
            problems.append(f"grasp_z_offset ({lo}, {hi}) has lo > hi; swap them")
        if problems:
            raise SkillError("invalid SkillSettings:\n  " + "\n  ".join(problems))


def choice_problems(put_down_spot: str, flip_mode: str) -> list[str]:
    """What is wrong with the skills' two named choices (empty when both are known); checked by
    SkillSettings and, before any worker starts, by the expert's settings that carry them."""
    problems = []
    if put_down_spot not in PUT_DOWN_SPOTS:
        problems.append(f"put_down_spot {put_down_spot!r} is not one of {', '.join(PUT_DOWN_SPOTS)}")
    if flip_mode not in FLIP_MODES:
        problems.append(f"flip_mode {flip_mode!r} is not one of {', '.join(FLIP_MODES)}")
    return problems


@dataclass(frozen=True, eq=False)
class SkillContext:
    """A small handle on one environment at the moment a skill starts.

    `data` is the live state and is only read; `scratch` is a second MjData of the same
    model that IK and collision checks overwrite freely."""

    model: mujoco.MjModel
    data: mujoco.MjData  # live state, read only
    scratch: mujoco.MjData  # IK / collision-check workspace
    robot: RobotIndex
    props: Mapping[str, int]  # block (body) name -> body id
    table_z: float  # table top height in the world [m]
    table: Rect  # the table top's extent (world frame) [m]
    workspace: Rect  # where put-down may choose a free table spot (world frame) [m]
    regions: Mapping[str, Rect] = field(default_factory=dict)  # region name -> rectangle (world) [m]
    settings: SkillSettings = SkillSettings()


def skill_context(scene, *, regions: Mapping[str, Rect] | None = None, workspace: Rect | None = None,
                  settings: SkillSettings = SkillSettings()) -> SkillContext:
    """A context for a built `demoforge.sim.Scene`. The default workspace is the table area
    0.35-0.65 m in front of the robot base and 0.25 m to either side, clipped to the table."""
    spec = scene.spec
    (tx, ty), (sx, sy) = spec.table.center, spec.table.size
    table = (tx - sx / 2, tx + sx / 2, ty - sy / 2, ty + sy / 2)
    if workspace is None:
        bx, by = spec.robot_pos
        hx, hy = sx / 2 - 0.05, sy / 2 - 0.05
        workspace = (max(bx + 0.35, tx - hx), min(bx + 0.65, tx + hx), max(by - 0.25, ty - hy), min(by + 0.25, ty + hy))
    return SkillContext(
        model=scene.model, data=scene.data, scratch=mujoco.MjData(scene.model), robot=scene.robot,
        props=dict(scene.props), table_z=float(spec.table.height), table=table, workspace=tuple(workspace),
        regions=dict(regions or {}), settings=settings,
    )


@dataclass(frozen=True)
class SkillFailure:
    """Why a skill could not produce a plan."""

    kind: str  # one of FAILURE_KINDS
    phase: str  # the phase being planned (one of PHASES)
    message: str  # what failed, with the numbers


@dataclass(frozen=True, eq=False)
class SkillPlan:
    """One skill's commands at the control rate, or why there are none.

    Tick k commands arm joint targets `q[k]` [rad] (a `joint_position` control law) and
    gripper closedness `gripper[k]` in [0, 1]; `phase[k]` indexes PHASES."""

    skill: str  # operator name
    args: tuple[str, ...]  # operator arguments as given
    q: np.ndarray  # (T, n_arm) joint targets [rad]
    gripper: np.ndarray  # (T,) gripper closedness command [0, 1]
    phase: np.ndarray  # (T,) int8 indices into PHASES
    params: dict  # the sampled draws (plain JSON), for the episode record
    failure: SkillFailure | None = None  # set when no plan exists (then T = 0)
    block_target: tuple[float, ...] | None = None  # expected block pose after the skill: x, y, z [m], wxyz
    control_hz: float = 60.0  # tick rate of q, gripper and phase [Hz]

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def ticks(self) -> int:
        return len(self.q)


def failed(skill: str, args: tuple[str, ...], n_arm: int, params: dict, failure: SkillFailure) -> SkillPlan:
    """A plan with no ticks that carries `failure`."""
    return SkillPlan(skill, args, np.zeros((0, n_arm)), np.zeros(0), np.zeros(0, np.int8), params, failure)


class Infeasible(Exception):
    """Raised inside a skill when a step has no plan; carries the structured failure."""

    def __init__(self, failure: SkillFailure):
        super().__init__(failure.message)
        self.failure = failure
