"""Physical scene draws: one sample of a problem's sidecar ranges, recorded as JSON.

`sample_scene(params, rng)` draws, in a fixed order and each from its own child stream of
`rng` (so widening one range never reshuffles the others):

    0 block_size  one cube edge per block, in sorted block-name order [m]
    1 table       table top height offset [m]
    2 friction    sliding friction of blocks and table top [-]
    3 robot       start TCP position in the robot base frame and its IK solution
    4 gripper     whether the gripper starts closed

Seeding: an episode's draw comes from `episode_rng(params, episode)`, a package's fixed
profiles from `bake_profiles(params, n, seed)`; both derive a `SeedSequence` from the
sidecar's per-problem `seed` and a stable key, never from global state.

JSON schema `demoforge.scene_draw/1` (sorted keys, lengths [m], angles [rad]):

    {"schema": ..., "problem": "stack_three-all-0000",
     "block_size_m": {"red": 0.041, ...}, "table_height_offset_m": -0.004, "friction": 0.93,
     "robot_start": null | {"tcp_pos_base_m": [x, y, z], "arm_q_rad": [...], "gripper_closed": false}}
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import mujoco
import numpy as np

from demoforge.errors import DemoforgeError
from demoforge.sim import RobotCard, bind_robot, panda_card, robot_spec, solve_ik
from demoforge.tasks.scene import Interval, SceneParams, interval_problems

SCHEMA = "demoforge.scene_draw/1"
STREAMS = ("block_size", "table", "friction", "robot", "gripper")
_EPISODE, _PROFILE = 1, 2  # spawn-key domains, so episode and profile draws never coincide


class SceneDrawError(DemoforgeError):
    """A scene draw could not be made or read."""


@dataclass(frozen=True)
class RobotStartParams:
    """Where a random robot start pose may put the TCP (gripper pointing down)."""

    tcp_x_m: Interval = (0.30, 0.50)  # TCP x window in the robot base frame [m]
    tcp_y_m: Interval = (-0.20, 0.20)  # TCP y window in the base frame [m]
    tcp_z_m: Interval = (0.25, 0.40)  # TCP height above the base (the table top) [m]
    p_closed: float = 0.5  # probability that the gripper starts closed [-]
    ik_tries: int = 20  # TCP targets tried before giving up


@dataclass(frozen=True)
class RobotStart:
    """A drawn robot start pose."""

    tcp_pos_base_m: tuple[float, float, float]  # TCP target in the robot base frame [m]
    arm_q_rad: tuple[float, ...]  # arm joints reaching it (gripper down) [rad]
    gripper_closed: bool  # fingers start fully closed


@dataclass(frozen=True)
class SceneDraw:
    """One sample of a problem's physical scene."""

    problem: str  # PDDL problem name
    block_size_m: tuple[tuple[str, float], ...]  # (block, cube edge [m]), sorted by block
    table_height_offset_m: float  # table top offset from nominal [m]
    friction: float  # sliding friction of blocks and table top [-]
    robot_start: RobotStart | None = None  # None: the card's home pose, gripper open


def episode_rng(params: SceneParams, episode: int) -> np.random.Generator:
    """The generator of episode `episode`'s draw of problem `params.problem`."""
    return np.random.default_rng(np.random.SeedSequence(params.seed, spawn_key=(_EPISODE, episode)))


def _uniform(rng: np.random.Generator, interval: Interval) -> float:
    lo, hi = interval
    return float(rng.uniform(lo, hi)) if hi > lo else float(lo)


def sample_scene(
    params: SceneParams, rng: np.random.Generator, *, robot_start: RobotStartParams | None = None,
    card: RobotCard | None = None,
) -> SceneDraw:
    """Draw block sizes, table offset, friction and (with `robot_start`) a robot start pose.

    Each quantity reads its own child of `rng` (spawned in `STREAMS` order); pass a fresh
    generator from `episode_rng` for reproducible draws."""
    streams = dict(zip(STREAMS, rng.spawn(len(STREAMS)), strict=True))
    sizes = tuple((name, _uniform(streams["block_size"], params.block_size_m)) for name, _ in sorted(params.blocks))
    start = None
    if robot_start is not None:
        start = _robot_start(params, robot_start, card or panda_card(), streams["robot"], streams["gripper"])
    return SceneDraw(
        problem=params.problem,
        block_size_m=sizes,
        table_height_offset_m=_uniform(streams["table"], params.table_height_offset_m),
        friction=_uniform(streams["friction"], params.friction),
        robot_start=start,
    )


def bake_profiles(
    params: SceneParams, n: int, seed: int, *, robot_start: RobotStartParams | None = None,
    card: RobotCard | None = None,
) -> tuple[SceneDraw, ...]:
    """`n` fixed scene profiles for an environment package built with `seed`; profile k
    depends only on (problem seed, package seed, k)."""
    if n < 1:
        raise SceneDrawError(f"profiles: {n} must be >= 1")
    return tuple(
        sample_scene(params, np.random.default_rng(np.random.SeedSequence(params.seed, spawn_key=(_PROFILE, seed, k))),
                     robot_start=robot_start, card=card)
        for k in range(n)
    )


@functools.lru_cache(maxsize=4)
def _bare_robot(card: RobotCard):
    model = robot_spec(card).compile()
    data = mujoco.MjData(model)
    index = bind_robot(model, card)
    data.qpos[index.arm_qpos] = card.home
    mujoco.mj_forward(model, data)
    down = np.zeros(4)
    mujoco.mju_mat2Quat(down, data.site_xmat[index.tcp_site])
    return model, index, down


def robot_start_problems(opts: RobotStartParams) -> list[str]:
    """Every reason `opts` cannot be sampled."""
    problems = [p for name in ("tcp_x_m", "tcp_y_m", "tcp_z_m") for p in interval_problems(name, getattr(opts, name))]
    if not 0.0 <= opts.p_closed <= 1.0:
        problems.append(f"p_closed: {opts.p_closed} must be a probability in [0, 1]")
    if opts.ik_tries < 1:
        problems.append(f"ik_tries: {opts.ik_tries} must be >= 1")
    return problems


def _robot_start(params: SceneParams, opts: RobotStartParams, card: RobotCard, rng: np.random.Generator,
                 grip_rng: np.random.Generator) -> RobotStart:
    problems = robot_start_problems(opts)
    if problems:
        raise SceneDrawError("invalid robot start options:\n" + "\n".join(problems))
    model, index, down = _bare_robot(card)
    data = mujoco.MjData(model)
    for _ in range(opts.ik_tries):
        target = np.array([_uniform(rng, opts.tcp_x_m), _uniform(rng, opts.tcp_y_m), _uniform(rng, opts.tcp_z_m)])
        data.qpos[index.arm_qpos] = card.home
        result = solve_ik(model, data, index, target, down, rng=rng, q_init=np.asarray(card.home))
        if result.success:
            closed = bool(grip_rng.random() < opts.p_closed)
            return RobotStart(tuple(float(x) for x in target), tuple(float(q) for q in result.q), closed)
    raise SceneDrawError(
        f"problem {params.problem!r}: no IK solution for {opts.ik_tries} robot start targets in the window "
        f"x {opts.tcp_x_m}, y {opts.tcp_y_m}, z {opts.tcp_z_m} [m, base frame]; shrink the window towards the robot"
    )


def draw_to_dict(draw: SceneDraw) -> dict:
    start = draw.robot_start
    return {
        "schema": SCHEMA,
        "problem": draw.problem,
        "block_size_m": dict(draw.block_size_m),
        "table_height_offset_m": draw.table_height_offset_m,
        "friction": draw.friction,
        "robot_start": None if start is None else {
            "tcp_pos_base_m": list(start.tcp_pos_base_m), "arm_q_rad": list(start.arm_q_rad),
            "gripper_closed": start.gripper_closed,
        },
    }


def draw_to_json(draw: SceneDraw) -> str:
    """Stable text: sorted keys, floats as Python writes them (exact round trip)."""
    return json.dumps(draw_to_dict(draw), sort_keys=True) + "\n"


def draw_from_dict(data: dict, *, file: str = "<scene draw>") -> SceneDraw:
    keys = {"schema", "problem", "block_size_m", "table_height_offset_m", "friction", "robot_start"}
    if not isinstance(data, dict):
        raise SceneDrawError(f"{file}: a scene draw must be a JSON object with keys {sorted(keys)}")
    problems = [f"missing key {k!r}" for k in sorted(keys - data.keys())]
    problems += [f"unknown key {k!r}" for k in sorted(data.keys() - keys)]
    if not problems and data["schema"] != SCHEMA:
        problems.append(f"schema {data['schema']!r}; this demoforge reads {SCHEMA!r}")
    if problems:
        raise SceneDrawError(f"{file}: invalid scene draw:\n" + "\n".join(problems))
    try:
        start = data["robot_start"]
        return SceneDraw(
            problem=str(data["problem"]),
            block_size_m=tuple(sorted((str(k), float(v)) for k, v in data["block_size_m"].items())),
            table_height_offset_m=float(data["table_height_offset_m"]),
            friction=float(data["friction"]),
            robot_start=None if start is None else RobotStart(
                tuple(float(x) for x in start["tcp_pos_base_m"]), tuple(float(q) for q in start["arm_q_rad"]),
                bool(start["gripper_closed"]),
            ),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SceneDrawError(f"{file}: invalid scene draw: {type(exc).__name__}: {exc}") from None


def draw_from_json(text: str, *, file: str = "<scene draw>") -> SceneDraw:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SceneDrawError(f"{file}:{exc.lineno}: not JSON: {exc.msg}") from None
    return draw_from_dict(data, file=file)
