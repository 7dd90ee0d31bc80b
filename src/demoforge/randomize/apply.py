"""Applying a draw: model-level quantities by recompiling, runtime quantities in place.

`apply_to_model` edits a copy of the scene's MjSpec (mass and inertia, joint damping and
frictionloss, gravity) and compiles a new model; the compiler recomputes everything derived
from masses (subtree masses, actuator and dof inverse weights), which editing `MjModel` arrays
in place would leave stale. `apply_to_env` changes only what a reset may change without a
recompile: controller gains, the start pose and camera poses, always relative to nominal
values held aside, so applying draw after draw never drifts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

import mujoco
import numpy as np

from demoforge.randomize.sample import draw_problems
from demoforge.randomize.spec import RandomizationError, RandomizationSpec
from demoforge.sim import ControlLaw, RobotIndex, apply_control_law
from demoforge.tasks.scene import SceneParams, scene_problems

MjcfSource = mujoco.MjSpec | str | Path


def _check(draw: dict) -> None:
    problems = draw_problems(draw)
    if problems:
        raise RandomizationError("invalid randomization draw:\n  " + "\n  ".join(problems))


def _load(source: MjcfSource) -> mujoco.MjSpec:
    if isinstance(source, mujoco.MjSpec):
        return source.copy()  # inputs are never mutated
    try:
        if isinstance(source, str) and source.lstrip().startswith("<"):
            return mujoco.MjSpec.from_string(source)
        return mujoco.MjSpec.from_file(str(source))
    except ValueError as exc:
        raise RandomizationError(f"cannot load MJCF {str(source)[:80]!r}: {exc}") from None


def _compile(mj: mujoco.MjSpec) -> mujoco.MjModel:
    try:
        return mj.compile()
    except ValueError as exc:
        raise RandomizationError(f"randomized model does not compile: {exc}") from None


def apply_to_model(draw: dict, source: MjcfSource, *, nominal: mujoco.MjModel | None = None) -> mujoco.MjModel:
    """A new model compiled from `source` (an MjSpec, left untouched, MJCF text or a path) with
    the draw's mass (inertia scaled alike), damping, frictionloss and gravity applied.

    `nominal` is `source` already compiled, if the caller holds it: it saves one compile when
    masses are scaled. It must come from the same source; masses are read from it."""
    _check(draw)
    mj = _load(source)
    masses, damping, friction = (draw.get(k, {}) for k in ("mass_scale", "damping_scale", "frictionloss_scale"))
    problems = [f"mass_scale: body {n!r} not in the model" for n in sorted(masses) if mj.body(n) is None]
    problems += [f"{key}: joint {n!r} not in the model" for key, table in (("damping_scale", damping),
                 ("frictionloss_scale", friction)) for n in sorted(table) if mj.joint(n) is None]
    if masses and mj.compiler.settotalmass > 0:
        problems.append(f"mass_scale: compiler settotalmass={mj.compiler.settotalmass} would undo the scaling; remove it")
    if problems:
        raise RandomizationError("draw does not fit the model:\n  " + "\n  ".join(problems))
    if masses:
        nominal = _scale_masses(mj, masses, nominal)
    for name, scale in damping.items():
        joint = mj.joint(name)
        joint.damping = (np.asarray(joint.damping, float) * scale).tolist()
    for name, scale in friction.items():
        mj.joint(name).frictionloss = float(mj.joint(name).frictionloss * scale)
    if "gravity_delta_mps2" in draw:
        g = np.asarray(mj.option.gravity, float)
        magnitude = float(np.linalg.norm(g))
        new = magnitude + draw["gravity_delta_mps2"]
        if magnitude == 0 or new <= 0:
            raise RandomizationError(f"gravity_delta_mps2 {draw['gravity_delta_mps2']} cannot act on gravity {g.tolist()} "
                                     f"(nominal magnitude must be > 0 and stay > 0)")
        mj.option.gravity = (g * (new / magnitude)).tolist()
    model = _compile(mj)
    if masses:
        names = list(masses)
        expected = nominal.body_mass[[nominal.body(n).id for n in names]] * np.array([masses[n] for n in names])
        got = model.body_mass[[model.body(n).id for n in names]]
        wrong = sorted(n for n, ok in zip(names, np.isclose(got, expected), strict=True) if not ok)
        if wrong:
            raise RandomizationError(f"mass_scale: the compiler overrode the masses of {wrong} "
                                     "(compiler inertiafromgeom='true'?); use 'auto'")
    return model


def _scale_masses(mj: mujoco.MjSpec, masses: dict, nominal: mujoco.MjModel | None) -> mujoco.MjModel:
    # Inertia usually comes from geoms; take the compiled body inertials and write them back
    # explicitly, scaled, so the edit works however the MJCF specifies them.
    if nominal is None:
        nominal = _compile(mj)
    missing = sorted(n for n in masses if mujoco.mj_name2id(nominal, mujoco.mjtObj.mjOBJ_BODY, n) < 0)
    if missing:
        raise RandomizationError(f"mass_scale: bodies {missing} are in the MjSpec but not in `nominal`; "
                                 "pass the model compiled from this source")
    for name, scale in masses.items():
        b = nominal.body(name).id
        body = mj.body(name)
        body.explicitinertial = True
        body.mass = float(nominal.body_mass[b] * scale)
        body.inertia = (nominal.body_inertia[b] * scale).tolist()
        body.fullinertia = [np.nan] * 6  # principal inertia, not a full tensor
        body.ipos = nominal.body_ipos[b].tolist()
        body.iquat = nominal.body_iquat[b].tolist()
    return nominal


@dataclass(frozen=True, eq=False)
class CameraBase:
    """Nominal camera poses in their parent bodies, held aside before any jitter."""

    names: tuple[str, ...]  # camera names, model order
    pos: np.ndarray  # (ncam, 3) [m]
    quat: np.ndarray  # (ncam, 4) wxyz


def snapshot_cameras(model: mujoco.MjModel) -> CameraBase:
    """The current (nominal) camera poses of `model`; take it before the first jitter."""
    names = tuple(model.camera(c).name for c in range(model.ncam))
    return CameraBase(names, model.cam_pos.copy(), model.cam_quat.copy())


class RandomizableEnv(Protocol):
    """What `apply_to_env` needs from an environment (VecSimEnv holds one per environment)."""

    model: mujoco.MjModel
    data: mujoco.MjData
    robot: RobotIndex
    law: ControlLaw  # nominal control law; gains are scaled from it
    camera_base: CameraBase  # nominal camera poses


@dataclass(frozen=True, eq=False)
class EnvHandle:
    """A plain model/data pair with what `apply_to_env` needs."""

    model: mujoco.MjModel
    data: mujoco.MjData
    robot: RobotIndex
    law: ControlLaw  # nominal control law
    camera_base: CameraBase  # nominal camera poses


def env_handle(model: mujoco.MjModel, data: mujoco.MjData, robot: RobotIndex, law: ControlLaw | None = None) -> EnvHandle:
    """A handle whose nominal values are `model`'s cameras now and `law` (default: the card's)."""
    return EnvHandle(model, data, robot, law or robot.card.controller, snapshot_cameras(model))


def _per_arm(table: dict, robot: RobotIndex, key: str, default: float) -> np.ndarray:
    names = [robot.prefix + j for j in robot.card.arm_joints]
    unknown = sorted(set(table) - set(names))
    if unknown:
        raise RandomizationError(f"{key}: {unknown} are not arm joints; arm joints: {names}")
    return np.array([table.get(n, default) for n in names], float)


def apply_to_env(draw: dict, env: RandomizableEnv) -> None:
    """Set the runtime quantities of `env` to the draw's: gains = nominal x multipliers, every
    camera = nominal pose + jitter (nominal where the draw has none), and the arm start pose =
    current arm pose + spawn offset, clipped into the joint limits. Call it right after the
    reset state is written; model-level keys are left to `apply_to_model`."""
    _check(draw)
    m, d, robot, base = env.model, env.data, env.robot, env.camera_base
    kp = _per_arm(draw.get("kp_scale", {}), robot, "kp_scale", 1.0)
    kd = _per_arm(draw.get("kd_scale", {}), robot, "kd_scale", 1.0)
    offset = _per_arm(draw.get("spawn_offset", {}), robot, "spawn_offset", 0.0)
    cam_pos, cam_rot = draw.get("camera_pos_offset_m", {}), draw.get("camera_rot_offset_rad", {})
    if base.pos.shape != (m.ncam, 3):
        raise RandomizationError(f"the camera snapshot holds {len(base.names)} cameras, the model {m.ncam}: "
                                 "take it with snapshot_cameras(model) of this model")
    unknown = sorted((set(cam_pos) | set(cam_rot)) - set(base.names))
    if unknown:
        raise RandomizationError(f"camera jitter for {unknown}, not cameras of the model; cameras: {list(base.names)}")
    law = env.law
    apply_control_law(m, robot, replace(law, kp=tuple(np.asarray(law.kp) * kp), kd=tuple(np.asarray(law.kd) * kd)))
    m.cam_pos[:] = base.pos
    m.cam_quat[:] = base.quat
    for name, delta in cam_pos.items():
        m.cam_pos[base.names.index(name)] += delta
    for name, rotvec in cam_rot.items():
        c = base.names.index(name)
        quat = np.zeros(4)
        # Tilt in the camera's own frame: base * turn.
        mujoco.mju_mulQuat(quat, base.quat[c], _quat_from_rotvec(np.asarray(rotvec, float)))
        m.cam_quat[c] = quat
    if np.any(offset):
        q = np.clip(d.qpos[robot.arm_qpos] + offset, robot.limits[:, 0], robot.limits[:, 1])
        d.qpos[robot.arm_qpos] = q
        d.qvel[robot.arm_dofs] = 0.0
        d.ctrl[robot.arm_actuators] = q  # the position servo holds the new start pose
    mujoco.mj_forward(m, d)


def _quat_from_rotvec(rotvec: np.ndarray) -> np.ndarray:
    quat = np.zeros(4)
    angle = float(np.linalg.norm(rotvec))
    if angle == 0.0:
        return np.array([1.0, 0.0, 0.0, 0.0])
    mujoco.mju_axisAngle2Quat(quat, rotvec / angle, angle)
    return quat


def apply_to_scene_params(spec: RandomizationSpec, params: SceneParams) -> SceneParams:
    """`params` with the spec's scene-range overrides (friction, block size, table height offset)."""
    overrides = {k: tuple(getattr(spec, k)) for k in ("friction", "block_size_m", "table_height_offset_m")
                 if getattr(spec, k) is not None}
    out = replace(params, **overrides)
    problems = scene_problems(out)
    if problems:
        raise RandomizationError(f"scene ranges of {params.problem!r} after the spec's overrides are invalid:\n  "
                                 + "\n  ".join(problems))
    return out
