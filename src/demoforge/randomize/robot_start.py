"""Random robot start poses: a TCP pose drawn from windows, solved by IK, free of self-collision.

Each reset state draws its own start (`symbolic.sample_reset_state(..., robot_start=...)`),
which also rejects a start that touches the table or a block. A draw, in order, from the
start's generator:

    position   x, y, z uniform in the windows, in the robot base frame (z = 0 is the table top) [m]
    yaw        uniform in `yaw_rad`: the hand turned about the vertical from the card's home pose [rad]
    tilt       the gripper axis tipped from straight down by an angle uniform over the spherical
               cap of half-angle `tilt_max_rad`, towards a uniform azimuth [rad]
    gripper    closed with probability `p_closed` (its own child stream, so changing the
               probability never moves a pose)

then IK from the home pose (`sim.solve_ik`, restarts from the same generator) and the
self-collision check: the robot's collision geoms made to collide with each other in a bare
model of the arm, MuJoCo's contacts after `mj_forward` at the start (fingers open or closed),
every pair that already touches at home (open or closed) being part of the design.

JSON (in an episode's `demoforge/scene_draw` record under `robot_start`, and per reset state in
a scene package's `reset_states.json`):

    {"tcp_pos_base_m": [x, y, z], "tcp_quat_base_wxyz": [w, x, y, z], "yaw_rad": ..., "tilt_rad": ...,
     "arm_q_rad": [...], "gripper_closed": false}
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import mujoco
import numpy as np

from demoforge.errors import DemoforgeError
from demoforge.fields import option
from demoforge.sim import RobotCard, bind_robot, robot_spec, solve_ik
from demoforge.sim.linkage import linkage_positions
from demoforge.tasks.scene import Interval, interval_problems


class RobotStartError(DemoforgeError):
    """Robot start options that cannot be drawn from."""


@dataclass(frozen=True)
class RobotStartParams:
    """Windows a random robot start is drawn from (one draw per reset state)."""

    tcp_x_m: Interval = (0.30, 0.50)  # TCP x window in the robot base frame [m]
    tcp_y_m: Interval = (-0.20, 0.20)  # TCP y window in the base frame [m]
    tcp_z_m: Interval = (0.25, 0.40)  # TCP height above the table top (z = 0 in the base frame); lo = z minimum [m]
    yaw_rad: Interval = (-math.pi / 2, math.pi / 2)  # hand turn about the vertical from the home pose [rad]
    tilt_max_rad: float = 0.35  # largest angle of the gripper axis from straight down [rad]
    p_closed: float = 0.5  # probability that the gripper starts closed [-]
    tries: int = 50  # draws per reset attempt before the attempt gives up (IK, self- and scene collision)


@dataclass(frozen=True)
class RobotStart:
    """A drawn robot start pose."""

    tcp_pos_base_m: tuple[float, float, float]  # TCP target in the robot base frame [m]
    arm_q_rad: tuple[float, ...]  # arm joints reaching it [rad]
    gripper_closed: bool  # fingers start fully closed
    tcp_quat_base_wxyz: tuple[float, float, float, float] | None = None  # TCP orientation target; None: not recorded
    yaw_rad: float = 0.0  # drawn turn about the vertical from the home orientation [rad]
    tilt_rad: float = 0.0  # drawn angle of the gripper axis from straight down [rad]


_WINDOWS = ("tcp_x_m", "tcp_y_m", "tcp_z_m", "yaw_rad")
_MAX_TILT = math.pi / 2  # beyond it the gripper points upwards


def _is_number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def robot_start_problems(opts: RobotStartParams, where: str = "robot_start") -> list[str]:
    """Every reason `opts` cannot be drawn from, each naming the field, the value and the fix."""
    problems = [f"{where}.{p}" for name in _WINDOWS for p in interval_problems(name, getattr(opts, name))]
    z = opts.tcp_z_m
    if not any(p.startswith(f"{where}.tcp_z_m") for p in problems) and z[0] <= 0.0:
        problems.append(f"{where}.tcp_z_m: z minimum {z[0]} [m] is at or below the table top (z = 0 in the robot base "
                        "frame); raise it above the blocks, e.g. 0.25")
    yaw = opts.yaw_rad
    if not any(p.startswith(f"{where}.yaw_rad") for p in problems) and (yaw[1] - yaw[0] > 2 * math.pi + 0.01):
        problems.append(f"{where}.yaw_rad: {list(yaw)} spans more than a full turn (2 pi); narrow it, e.g. "
                        "[-1.5708, 1.5708]")
    if not _is_number(opts.tilt_max_rad) or not 0.0 <= opts.tilt_max_rad <= _MAX_TILT:
        problems.append(f"{where}.tilt_max_rad: {opts.tilt_max_rad!r} must be an angle in [0, {_MAX_TILT:.4f}] rad "
                        "(0 = gripper straight down)")
    if not _is_number(opts.p_closed) or not 0.0 <= opts.p_closed <= 1.0:
        problems.append(f"{where}.p_closed: {opts.p_closed!r} must be a probability in [0, 1]")
    if isinstance(opts.tries, bool) or not isinstance(opts.tries, int) or not 1 <= opts.tries <= 10_000:
        problems.append(f"{where}.tries: {opts.tries!r} must be an integer in [1, 10000]")
    return problems


def check_robot_start(opts: RobotStartParams, where: str = "robot_start") -> RobotStartParams:
    """`opts`, or a RobotStartError listing every problem."""
    problems = robot_start_problems(opts, where)
    if problems:
        raise RobotStartError("invalid robot start windows:\n  " + "\n  ".join(problems))
    return opts


def params_to_dict(opts: RobotStartParams) -> dict:
    """Plain JSON/YAML of `opts` (intervals as lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(opts).items()}


def params_from_dict(data: object, where: str = "robot_start") -> RobotStartParams:
    """RobotStartParams from a mapping of its fields (missing ones keep their defaults); unknown
    keys and bad values are all reported in one RobotStartError."""
    names = [f.name for f in fields(RobotStartParams)]
    if data is None or data is True:
        return RobotStartParams()
    if not isinstance(data, dict):
        raise RobotStartError(f"{where}: {data!r} must be a mapping of robot start fields ({', '.join(names)})")
    problems = [f"{where}: unknown key {k!r}; keys: {', '.join(names)}" for k in sorted(set(data) - set(names), key=str)]
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in names}
    opts = RobotStartParams(**values)
    problems += robot_start_problems(opts, where)
    if problems:
        raise RobotStartError("invalid robot start windows:\n  " + "\n  ".join(problems))
    return opts


def load_robot_start(path: str | Path) -> RobotStartParams:
    """RobotStartParams from a YAML file of its fields (see `RobotStartParams`)."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise RobotStartError(f"robot start spec {str(path)!r} does not exist; give a YAML file of RobotStartParams "
                              "fields (e.g. tcp_x_m: [0.3, 0.5])")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise RobotStartError(f"{path}: not valid YAML: {exc}") from None
    return params_from_dict({} if data is None else data, where=str(path))


def resolve_robot_start(enabled: bool, spec: str | Path | None = None, *,
                        p_closed: float | None = None) -> RobotStartParams | None:
    """The windows the command-line flags ask for: `--robot-start` (the defaults) or
    `--robot-start-spec FILE.yaml` (implies it), `p_closed` replacing the probability; None = home."""
    if not enabled and spec is None:
        if p_closed is not None:
            raise RobotStartError(f"--p-closed {p_closed}: the gripper's start is drawn only with a random robot "
                                  "start; add --robot-start (or --robot-start-spec FILE)")
        return None
    opts = load_robot_start(spec) if spec is not None else RobotStartParams()
    if p_closed is not None:
        opts = check_robot_start(dataclasses.replace(opts, p_closed=p_closed))
    return opts


def start_to_dict(start: RobotStart) -> dict:
    quat = start.tcp_quat_base_wxyz
    return {"tcp_pos_base_m": list(start.tcp_pos_base_m), "tcp_quat_base_wxyz": None if quat is None else list(quat),
            "yaw_rad": start.yaw_rad, "tilt_rad": start.tilt_rad, "arm_q_rad": list(start.arm_q_rad),
            "gripper_closed": start.gripper_closed}


def start_from_dict(data: dict) -> RobotStart:
    """A RobotStart from its JSON; records written before orientations were drawn (gripper down)
    have no quaternion, yaw or tilt. Raises KeyError/TypeError/ValueError on a malformed one."""
    quat = data.get("tcp_quat_base_wxyz")
    return RobotStart(tuple(float(x) for x in data["tcp_pos_base_m"]), tuple(float(q) for q in data["arm_q_rad"]),
                      bool(data["gripper_closed"]), None if quat is None else tuple(float(x) for x in quat),
                      float(data.get("yaw_rad", 0.0)), float(data.get("tilt_rad", 0.0)))


def _uniform(rng: np.random.Generator, interval: Interval) -> float:
    lo, hi = interval
    return float(rng.uniform(lo, hi)) if hi > lo else float(lo)


def _set_fingers(model, data, index, closed: bool) -> None:
    data.qpos[index.finger_qpos] = index.finger_closed if closed else index.finger_open
    if index.linkage_qpos.size:  # a linkage gripper's passive joints follow the drivers
        data.qpos[index.linkage_qpos] = linkage_positions(index.linkage_closedness, index.linkage_positions,
                                                          1.0 if closed else 0.0)


SELF_PENETRATION = 1e-3  # a robot geom pair counts as colliding beyond this depth [m] (closed pads touch at ~0)


def _contact_pairs(model, data) -> set[tuple[int, int]]:
    return {tuple(sorted((int(c.geom1), int(c.geom2)))) for c in data.contact[: data.ncon]
            if c.dist < -SELF_PENETRATION}


@functools.lru_cache(maxsize=4)
def _bare_robot(card: RobotCard):
    """(model, index, home TCP rotation, the self-collision model's data, pairs touching at home)."""
    model = robot_spec(card).compile()
    index = bind_robot(model, card)
    data = mujoco.MjData(model)
    data.qpos[index.arm_qpos] = card.home
    mujoco.mj_forward(model, data)
    home_rot = data.site_xmat[index.tcp_site].reshape(3, 3).copy()
    # The self-collision model: every geom that collides with anything collides with every other
    # (parents and children stay filtered, as MuJoCo does by default).
    solid = (model.geom_contype != 0) | (model.geom_conaffinity != 0)
    model.geom_contype[:] = np.where(solid, 1, 0)
    model.geom_conaffinity[:] = np.where(solid, 1, 0)
    for b in range(model.nbody):  # the broad phase filters bodies by the union of their geoms' bits
        geoms = model.geom_bodyid == b
        model.body_contype[b] = model.body_conaffinity[b] = int(solid[geoms].any())
    model.geom_margin[:] = 0.0
    designed = set()
    for closed in (False, True):
        data.qpos[index.arm_qpos] = card.home
        _set_fingers(model, data, index, closed)
        mujoco.mj_forward(model, data)
        designed |= _contact_pairs(model, data)
    return model, index, home_rot, data, frozenset(designed)


def self_collisions(card: RobotCard, q: np.ndarray, closed: bool) -> list[str]:
    """The robot's body pairs ("a/b") in contact at arm joints `q` [rad] with the gripper
    closed or open, beyond those that touch at home; [] when none."""
    model, index, _, data, designed = _bare_robot(card)
    data.qpos[index.arm_qpos] = q
    _set_fingers(model, data, index, closed)
    mujoco.mj_forward(model, data)
    hits = set()
    for g1, g2 in _contact_pairs(model, data) - designed:
        b1, b2 = sorted((model.body(int(model.geom_bodyid[g1])).name, model.body(int(model.geom_bodyid[g2])).name))
        hits.add(f"{b1}/{b2}")
    return sorted(hits)


def _axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    quat, mat = np.zeros(4), np.zeros(9)
    mujoco.mju_axisAngle2Quat(quat, axis, angle)
    mujoco.mju_quat2Mat(mat, quat)
    return mat.reshape(3, 3)


def propose_start(opts: RobotStartParams, card: RobotCard, pose_rng: np.random.Generator,
                  grip_rng: np.random.Generator) -> tuple[RobotStart | None, str]:
    """One draw: a reachable start free of self-collision, or (None, why not). The scene (table,
    blocks) is the caller's to check."""
    model, index, home_rot, _, _ = _bare_robot(card)
    pos = np.array([_uniform(pose_rng, opts.tcp_x_m), _uniform(pose_rng, opts.tcp_y_m),
                    _uniform(pose_rng, opts.tcp_z_m)])
    yaw = _uniform(pose_rng, opts.yaw_rad)
    # uniform over the spherical cap: cos(tilt) uniform in [cos(max), 1]
    tilt = float(np.arccos(1.0 - pose_rng.random() * (1.0 - np.cos(opts.tilt_max_rad))))
    azimuth = float(pose_rng.uniform(0.0, 2 * np.pi))
    closed = bool(grip_rng.random() < opts.p_closed)
    rot = _axis_angle(np.array([np.cos(azimuth), np.sin(azimuth), 0.0]), tilt) @ _axis_angle(
        np.array([0.0, 0.0, 1.0]), yaw) @ home_rot
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, rot.ravel())
    data = mujoco.MjData(model)
    data.qpos[index.arm_qpos] = card.home
    result = solve_ik(model, data, index, pos, quat, rng=pose_rng, q_init=np.asarray(card.home))
    if not result.success:
        return None, "out of reach"
    hits = self_collisions(card, result.q, closed)
    if hits:
        return None, f"self-collision {hits[0]}"
    return RobotStart(tuple(float(x) for x in pos), tuple(float(q) for q in result.q), closed,
                      tuple(float(x) for x in quat), yaw, tilt), ""


def describe(opts: RobotStartParams) -> str:
    """The windows in one line, for error messages."""
    return (f"x {list(opts.tcp_x_m)}, y {list(opts.tcp_y_m)}, z {list(opts.tcp_z_m)} [m, base frame], "
            f"yaw {[round(v, 4) for v in opts.yaw_rad]}, tilt <= {opts.tilt_max_rad} [rad]")


def _robot_start_value(value: object, where: str) -> dict | None:
    """`robot_start` as a config stores it: the full windows (true = the defaults; a path = a spec
    file), or None."""
    if value is False:
        return None
    if isinstance(value, str):
        return params_to_dict(load_robot_start(value))
    return params_to_dict(params_from_dict(value, where=where))


def robot_start_option():
    """The `robot_start` field of the configs that draw starts (scenes, execute; one value per run)."""
    return option(None, "Each reset state's (or PDDL episode's) arm starts at a pose drawn from windows instead of "
                        "home: --robot-start (the defaults, README 'Robot start') or --robot-start-spec FILE.yaml "
                        "(RobotStartParams fields); YAML: true or a mapping.", kind="mapping", shared=True,
                  normalize=_robot_start_value)
