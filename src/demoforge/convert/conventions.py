"""Action conventions: pure projections of a canonical Episode at a control rate.

Every convention returns the same state, [arm q, gripper] at the tick whose image the
policy sees, and its own action:

- `joint_pos`: achieved arm q at t + 1/rate, plus the gripper closedness then;
- `joint_vel`: (q(t + 1/rate) - q(t)) * rate [rad/s] (the finite difference, not the
  measured velocity), plus the gripper closedness at t + 1/rate;
- `joint_target`: the commanded joint targets in force at t and the commanded gripper
  closedness, unclamped (> 1 means squeeze); needs a law that commands joint targets;
- `raw_cmd`: the recorded controller command verbatim;
- `as_recorded`: the source's own `action` column verbatim, sampled at the kept ticks like
  every other column (for data demoforge did not make, whose action meaning it does not know).

The last tick's action is "stay": q and gripper of that tick (joint_pos), zero velocity
and the gripper of that tick (joint_vel). joint_target and raw_cmd sample the command
recorded at each kept tick, the last one included; as_recorded the recorded action.

joint_pos and joint_vel never read a recorded action: they rebuild it from the observed
states (`REBUILT` says how, for the note a bake prints when the source recorded one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from demoforge.convert.episode import BakeError, Episode

DEFAULT_CONVENTION = "joint_target"
# Laws whose commands become joint targets (cartesian_delta steps differential IK to targets).
TARGET_MODES = ("joint_position", "cartesian_delta")
CARTESIAN_PARTS = ("dx", "dy", "dz", "rx", "ry", "rz")
AS_RECORDED = "as_recorded"
# conventions that build the action from observed states instead of the recorded one -> how
REBUILT = {"joint_pos": "rebuilds the action from the next observed state",
           "joint_vel": "rebuilds the action from the change of the observed state to the next tick"}


@dataclass(frozen=True)
class Projection:
    """One episode under one convention at one rate: N output ticks."""

    ticks: np.ndarray  # (N,) native tick index of each output tick
    state: np.ndarray  # (N, n_arm + 1) float32 [arm q [rad], gripper closedness]
    action: np.ndarray  # (N, k) float32
    state_names: tuple[str, ...]  # n_arm + 1 names
    action_names: tuple[str, ...]  # k names
    state_parts: dict[str, tuple[int, int]]  # part -> [start, end) slice of state
    action_parts: dict[str, tuple[int, int]]  # part -> [start, end) slice of action


def valid_rates(native: int) -> list[int]:
    """Rates a native rate can be baked at: its divisors, highest first [Hz]."""
    return [r for r in range(native, 0, -1) if native % r == 0]


def stride_for(native: int, rate: int | None) -> int:
    """Native ticks per output tick; `rate` None means the native rate."""
    if rate is None:
        return 1
    if not isinstance(rate, int) or rate <= 0 or rate > native or native % rate:
        raise BakeError(
            f"--control-freq {rate!r} does not divide the native rate {native} Hz exactly; "
            f"valid rates are {valid_rates(native)}"
        )
    return native // rate


def output_ticks(length: int, stride: int) -> np.ndarray:
    """Native tick indices kept at a stride: 0, stride, 2*stride, ... < length."""
    return np.arange(0, length, stride, dtype=np.int64)


def _arm_parts(ep: Episode) -> tuple[tuple[str, ...], dict[str, tuple[int, int]]]:
    n = ep.n_arm
    return (*ep.joint_names, "gripper"), {"arm": (0, n), "gripper": (n, n + 1)}


def _next(ticks: np.ndarray) -> np.ndarray:
    """Each output tick's successor; the last one is its own ("stay")."""
    return np.append(ticks[1:], ticks[-1])


def _keep_hint(ep: Episode) -> str:
    return f", or {AS_RECORDED} to keep its recorded action as it is" if ep.action is not None else ""


def joint_pos(ep: Episode, ticks: np.ndarray, rate: int) -> tuple[np.ndarray, tuple[str, ...], dict]:
    nxt = _next(ticks)
    names, parts = _arm_parts(ep)
    return np.column_stack([ep.q[nxt], ep.gripper[nxt]]), names, parts


def joint_vel(ep: Episode, ticks: np.ndarray, rate: int) -> tuple[np.ndarray, tuple[str, ...], dict]:
    nxt = _next(ticks)
    names, parts = _arm_parts(ep)
    vel = (ep.q[nxt] - ep.q[ticks]) * rate
    return np.column_stack([vel, ep.gripper[nxt]]), names, parts


def joint_target(ep: Episode, ticks: np.ndarray, rate: int) -> tuple[np.ndarray, tuple[str, ...], dict]:
    if ep.target is None or ep.target_gripper is None:
        raise BakeError(
            f"{ep.source}: episode {ep.index}: convention 'joint_target' needs the commanded joint targets, which "
            f"a {ep.reader!r} source does not record; use joint_pos or joint_vel{_keep_hint(ep)}"
        )
    mode = (ep.law or {}).get("mode")
    if mode not in TARGET_MODES:
        raise BakeError(
            f"{ep.source}: convention 'joint_target' is undefined under control law mode {mode!r} (a torque-mode "
            f"or unknown law has no joint targets); laws with targets: {list(TARGET_MODES)}; "
            "use joint_pos, joint_vel or raw_cmd"
        )
    names, parts = _arm_parts(ep)
    return np.column_stack([ep.target[ticks], ep.target_gripper[ticks]]), names, parts


def raw_cmd(ep: Episode, ticks: np.ndarray, rate: int) -> tuple[np.ndarray, tuple[str, ...], dict]:
    if ep.raw_command is None:
        raise BakeError(
            f"{ep.source}: episode {ep.index}: convention 'raw_cmd' needs a recorded 'raw_command' column, which "
            f"this {ep.reader!r} source lacks; use joint_pos or joint_vel{_keep_hint(ep)}"
        )
    mode = (ep.law or {}).get("mode")
    if mode == "cartesian_delta" and rate != ep.fps:
        raise BakeError(
            f"{ep.source}: raw_cmd under a cartesian_delta law is a TCP displacement per native tick "
            f"({ep.fps} Hz); sampling it at {rate} Hz would drop motion. Bake raw_cmd at {ep.fps} Hz, "
            "or use joint_target / joint_vel"
        )
    m = ep.raw_command.shape[1] - 1
    return ep.raw_command[ticks], command_names(ep), {"arm": (0, m), "gripper": (m, m + 1)}


def as_recorded(ep: Episode, ticks: np.ndarray, rate: int) -> tuple[np.ndarray, tuple[str, ...], dict]:
    if ep.action is None:
        raise BakeError(
            f"{ep.source}: episode {ep.index}: convention {AS_RECORDED!r} keeps the source's 'action' column, "
            "which this source lacks; use joint_pos or joint_vel"
        )
    k = ep.action.shape[1]
    if ep.reader == "demoforge_raw" and k == ep.n_arm + 1:  # the raw contract: [arm targets, gripper]
        parts = {"arm": (0, k - 1), "gripper": (k - 1, k)}
    else:  # what the components are is the source's business: one part, as recorded
        parts = {"recorded": (0, k)}
    return ep.action[ticks], ep.action_names, parts


def command_names(ep: Episode) -> tuple[str, ...]:
    """Names of the raw command's components under the episode's law."""
    m = ep.raw_command.shape[1] - 1
    mode = (ep.law or {}).get("mode")
    if mode == "cartesian_delta" and m == len(CARTESIAN_PARTS):
        return (*CARTESIAN_PARTS, "gripper")
    if mode == "joint_position" and m == ep.n_arm:
        return (*ep.joint_names, "gripper")
    return (*(f"cmd_{k}" for k in range(m)), "gripper")


# convention name -> function(episode, native ticks kept, rate) -> (action, names, parts)
CONVENTIONS: dict[str, Callable[[Episode, np.ndarray, int], tuple[np.ndarray, tuple[str, ...], dict]]] = {
    "joint_pos": joint_pos,
    "joint_vel": joint_vel,
    "joint_target": joint_target,
    "raw_cmd": raw_cmd,
    AS_RECORDED: as_recorded,
}


def check_convention(name: str) -> None:
    if name not in CONVENTIONS:
        raise BakeError(f"control space {name!r} is unknown; choose one of {sorted(CONVENTIONS)}")


def project(ep: Episode, convention: str, rate: int | None = None) -> Projection:
    """`ep` under `convention` at `rate` [Hz] (None = the native rate)."""
    check_convention(convention)
    stride = stride_for(ep.fps, rate)
    rate = ep.fps // stride
    ticks = output_ticks(ep.length, stride)
    action, action_names, action_parts = CONVENTIONS[convention](ep, ticks, rate)
    state_names, state_parts = _arm_parts(ep)
    state = np.column_stack([ep.q[ticks], ep.gripper[ticks]])
    return Projection(
        ticks=ticks, state=state.astype(np.float32), action=np.asarray(action, dtype=np.float32),
        state_names=state_names, action_names=tuple(action_names), state_parts=state_parts,
        action_parts=dict(action_parts),
    )
