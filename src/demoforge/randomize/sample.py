"""Seeded draws from a RandomizationSpec, as plain JSON that diffs.

Each field draws from its own stream: a `SeedSequence` whose spawn key is the root key plus a
stable hash of the field name. Disabling or adding one field therefore never changes another
field's values, and the same integer seed gives byte-identical draws on any machine. Within a
field, values are drawn in the order of `DrawTargets` (robot names sorted, then prop names
sorted), so switching `props` on appends prop values without changing the robot's.

A draw holds only enabled fields (scene-range overrides are not draws; see `apply_to_scene_params`):

    {"schema": "demoforge.randomization/1",
     "mass_scale": {"robot/link1": 1.03, ...},          # body name -> multiplier
     "damping_scale" / "frictionloss_scale": {joint name -> multiplier},
     "kp_scale" / "kd_scale": {arm joint name -> multiplier},
     "camera_pos_offset_m": {camera name -> [dx, dy, dz]},   # in the camera's parent frame [m]
     "camera_rot_offset_rad": {camera name -> [rx, ry, rz]}, # rotation vector in the camera frame [rad]
     "spawn_offset": {arm joint name -> offset},          # [rad] or [m]
     "gravity_delta_mps2": 0.12}                          # added to the gravity magnitude [m/s^2]

Values are rounded to 10 significant digits when drawn, so `loads_draw(dumps_draw(d)) == d`
and a recorded draw reproduces exactly what was applied.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from dataclasses import dataclass

import mujoco
import numpy as np

from demoforge.randomize.spec import RandomizationError, RandomizationSpec
from demoforge.sim import RobotIndex

SCHEMA = "demoforge.randomization/1"
MODEL_KEYS = ("mass_scale", "damping_scale", "frictionloss_scale", "gravity_delta_mps2")
RUNTIME_KEYS = ("kp_scale", "kd_scale", "camera_pos_offset_m", "camera_rot_offset_rad", "spawn_offset")
DRAW_KEYS = ("schema", *MODEL_KEYS, *RUNTIME_KEYS)
DIGITS = 10  # significant digits kept in a draw
_FMT = f"%.{DIGITS}g"

RngOrSeed = int | np.random.SeedSequence | np.random.Generator


@dataclass(frozen=True)
class DrawTargets:
    """The names a draw can refer to, resolved from one compiled model."""

    robot_bodies: tuple[str, ...]  # robot bodies with mass, sorted
    robot_joints: tuple[str, ...]  # robot joints, sorted
    prop_bodies: tuple[str, ...]  # movable non-robot bodies, sorted
    prop_joints: tuple[str, ...]  # their joints, sorted
    arm_joints: tuple[str, ...]  # arm joints in the card's order (gains, spawn offsets)
    cameras: tuple[str, ...]  # every camera, in model order


def draw_targets(model: mujoco.MjModel, robot: RobotIndex) -> DrawTargets:
    """Robot and prop names of `model`; robot parts are the bodies of the bound arm's tree."""
    robot_ids = {int(b) for b in robot.body_ids}
    name = lambda obj, i: mujoco.mj_id2name(model, obj, i) or ""  # noqa: E731
    B, J, C = mujoco.mjtObj.mjOBJ_BODY, mujoco.mjtObj.mjOBJ_JOINT, mujoco.mjtObj.mjOBJ_CAMERA
    robot_bodies = [name(B, b) for b in range(1, model.nbody) if b in robot_ids and model.body_mass[b] > 0]
    prop_ids = [b for b in range(1, model.nbody) if b not in robot_ids and model.body_jntnum[b] > 0]
    robot_joints = [name(J, j) for j in range(model.njnt) if int(model.jnt_bodyid[j]) in robot_ids]
    prop_joints = [name(J, j) for j in range(model.njnt) if int(model.jnt_bodyid[j]) in prop_ids]
    unnamed = [n for n in (*robot_bodies, *robot_joints, *prop_joints) if not n]
    unnamed += ["" for b in prop_ids if not name(B, b)]
    if unnamed:
        raise RandomizationError(f"{len(unnamed)} randomized bodies or joints have no name; name them in the model")
    return DrawTargets(
        robot_bodies=tuple(sorted(robot_bodies)),
        robot_joints=tuple(sorted(robot_joints)),
        prop_bodies=tuple(sorted(name(B, b) for b in prop_ids)),
        prop_joints=tuple(sorted(prop_joints)),
        arm_joints=tuple(robot.prefix + j for j in robot.card.arm_joints),
        cameras=tuple(name(C, c) for c in range(model.ncam)),
    )


@functools.lru_cache(maxsize=256)
def _key(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def _root(rng_or_seed: RngOrSeed) -> tuple[int | list[int], tuple[int, ...]]:
    if isinstance(rng_or_seed, np.random.Generator):
        # One draw from the caller's generator, so consecutive calls give fresh draws.
        return int(rng_or_seed.integers(0, 2**63)), ()
    if isinstance(rng_or_seed, np.random.SeedSequence):
        return rng_or_seed.entropy, tuple(rng_or_seed.spawn_key)
    if isinstance(rng_or_seed, int | np.integer) and not isinstance(rng_or_seed, bool) and rng_or_seed >= 0:
        return int(rng_or_seed), ()
    raise RandomizationError(f"seed must be a non-negative int, a SeedSequence or a Generator, got {rng_or_seed!r}")


def field_rng(rng_or_seed: RngOrSeed, field: str) -> np.random.Generator:
    """The independent stream of one field."""
    entropy, spawn_key = _root(rng_or_seed)
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(*spawn_key, _key(field))))


def _q(x: float) -> float:
    return float(_FMT % x) + 0.0  # + 0.0 turns -0.0 into 0.0


def _scales(rng: np.random.Generator, names: tuple[str, ...], bounds: tuple[float, float]) -> dict[str, float]:
    values = rng.uniform(bounds[0], bounds[1], size=len(names)).tolist()
    return {n: _q(v) for n, v in zip(names, values, strict=True)}


def _rotvec(rng: np.random.Generator, max_angle: float) -> list[float]:
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    return [_q(c) for c in (axis * rng.uniform(0.0, max_angle)).tolist()]


def sample(spec: RandomizationSpec, rng_or_seed: RngOrSeed, targets: DrawTargets) -> dict:
    """One draw of every enabled field of `spec` for the names in `targets`."""
    if spec.cameras is not None:
        missing = sorted(set(spec.cameras) - set(targets.cameras))
        if missing:
            raise RandomizationError(f"cameras: {missing} not in the model; cameras: {list(targets.cameras)}")
    # Generator input is consumed once, here, so every field shares one root.
    root = _root(rng_or_seed)
    seq = np.random.SeedSequence(root[0], spawn_key=root[1])
    rng = lambda field: field_rng(seq, field)  # noqa: E731
    bodies = targets.robot_bodies + (targets.prop_bodies if spec.props else ())
    joints = targets.robot_joints + (targets.prop_joints if spec.props else ())
    cams = targets.cameras if spec.cameras is None else tuple(c for c in targets.cameras if c in spec.cameras)
    draw: dict = {"schema": SCHEMA}
    for field, names in (("mass_scale", bodies), ("damping_scale", joints), ("frictionloss_scale", joints),
                         ("kp_scale", targets.arm_joints), ("kd_scale", targets.arm_joints)):
        if getattr(spec, field) is not None:
            draw[field] = _scales(rng(field), names, getattr(spec, field))
    if spec.gravity_jitter_mps2 is not None:
        j = spec.gravity_jitter_mps2
        draw["gravity_delta_mps2"] = _q(rng("gravity_jitter_mps2").uniform(-j, j))
    if spec.camera_pos_jitter_m is not None:
        g, j = rng("camera_pos_jitter_m"), spec.camera_pos_jitter_m
        draw["camera_pos_offset_m"] = {c: [_q(v) for v in g.uniform(-j, j, size=3).tolist()] for c in cams}
    if spec.camera_rot_jitter_rad is not None:
        g = rng("camera_rot_jitter_rad")
        draw["camera_rot_offset_rad"] = {c: _rotvec(g, spec.camera_rot_jitter_rad) for c in cams}
    if spec.spawn_jitter is not None:
        j = spec.spawn_jitter
        draw["spawn_offset"] = _scales(rng("spawn_jitter"), targets.arm_joints, (-j, j))
    return draw


def _fmt(value: object, indent: int) -> str:
    pad = "  " * (indent + 1)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{pad}{json.dumps(str(k))}: {_fmt(value[k], indent + 1)}" for k in sorted(value)]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_fmt(v, indent) for v in value) + "]"
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        if not math.isfinite(value):
            raise RandomizationError(f"draw holds a non-finite number {value}; draws must be finite")
        text = _FMT % float(value)
        return text if any(c in text for c in ".en") else text + ".0"
    raise RandomizationError(f"draw holds a {type(value).__name__} ({value!r}); draws hold numbers, strings, lists, dicts")


def dumps_draw(draw: dict) -> str:
    """Stable text of a draw: sorted keys, one key per line, floats at 10 significant digits."""
    return _fmt(draw, 0) + "\n"


def loads_draw(text: str, *, where: str = "<draw>") -> dict:
    """A draw from `dumps_draw` (or any JSON of the same shape), checked."""
    try:
        draw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RandomizationError(f"{where}:{exc.lineno}: not JSON: {exc.msg}") from None
    problems = draw_problems(draw)
    if problems:
        raise RandomizationError(f"{where}: invalid randomization draw:\n  " + "\n  ".join(problems))
    return draw


def draw_problems(draw: object) -> list[str]:
    """Every structural problem of a draw (names are checked against the model where applied)."""
    if not isinstance(draw, dict):
        return [f"a draw must be a JSON object, got {type(draw).__name__}"]
    problems = [f"unknown key {k!r}; known keys: {', '.join(DRAW_KEYS)}" for k in sorted(set(draw) - set(DRAW_KEYS))]
    if draw.get("schema") != SCHEMA:
        problems.append(f"schema: {draw.get('schema')!r}, this demoforge reads {SCHEMA!r}")
    num = lambda v: isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)  # noqa: E731
    for key in ("mass_scale", "damping_scale", "frictionloss_scale", "kp_scale", "kd_scale", "spawn_offset"):
        if key in draw and not (isinstance(draw[key], dict) and all(num(v) for v in draw[key].values())):
            problems.append(f"{key}: must map names to finite numbers")
    for key in ("camera_pos_offset_m", "camera_rot_offset_rad"):
        if key in draw and not (isinstance(draw[key], dict) and all(
                isinstance(v, list) and len(v) == 3 and all(num(x) for x in v) for v in draw[key].values())):
            problems.append(f"{key}: must map camera names to [x, y, z] finite numbers")
    if "gravity_delta_mps2" in draw and not num(draw["gravity_delta_mps2"]):
        problems.append(f"gravity_delta_mps2: {draw['gravity_delta_mps2']!r} must be a finite number")
    return problems


def split_draw(draw: dict) -> tuple[dict, dict]:
    """(model-level part, runtime part); only the first needs a recompile."""
    model = {k: v for k, v in draw.items() if k in MODEL_KEYS}
    runtime = {k: v for k, v in draw.items() if k in RUNTIME_KEYS}
    return model, runtime
