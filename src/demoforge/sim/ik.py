"""Inverse kinematics of the TCP site, and collision checks of joint-space paths.

Damped least squares on `mj_jacSite`; joint positions stay inside the limits (by a small
margin, so a position servo never presses a joint into its limit), and joints
held at a limit drop out of the step (an active set: clipping alone stalls about 1.5% of
solves near the workspace boundary); a weak pull towards the home pose acts in the
Jacobian's null space (gain 0.01: at 0.05 the pull fights convergence). A solve that stalls
restarts from a uniformly random configuration drawn from the caller's Generator, so results
are reproducible per seed. `nearest_ik` then slides a solution along the self-motion manifold
(the arm's null space: the redundant 7th DOF and, within tolerance, nothing else) to the one
closest to a reference configuration, so motion planned from it keeps the elbow and wrist
where they were.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from demoforge.sim.robot_model import RobotIndex


@dataclass(frozen=True)
class IKOptions:
    """Tolerances and effort of one solve."""

    pos_tol: float = 1e-3  # position error accepted [m]
    rot_tol: float = 1e-2  # orientation error accepted [rad]; ignored without a target quat
    max_iters: int = 60  # iterations per attempt
    restarts: int = 15  # random restarts after the first attempt
    patience: int = 8  # iterations without a 1% error drop before an attempt counts as stalled
    damping: float = 1e-2  # DLS damping lambda [-]
    posture_gain: float = 0.01  # null-space pull towards home per iteration [-]
    max_step: float = 0.4  # largest joint change per iteration [rad]
    limit_margin: float = 0.005  # solutions stay this far inside each joint's range [rad]


@dataclass(frozen=True)
class IKResult:
    """Outcome of a solve."""

    q: np.ndarray  # arm joint positions [rad] (best found, even on failure)
    success: bool  # both errors within tolerance
    pos_err: float  # [m]
    rot_err: float  # [rad]
    attempts: int  # 1 + restarts used


def site_error(data: mujoco.MjData, site: int, pos: np.ndarray, quat: np.ndarray | None) -> np.ndarray:
    """(6,) [position error [m]; rotation vector error [rad]] in the world frame."""
    err = np.zeros(6)
    err[:3] = pos - data.site_xpos[site]
    if quat is not None:
        cur, inv, diff = np.zeros(4), np.zeros(4), np.zeros(4)
        mujoco.mju_mat2Quat(cur, data.site_xmat[site])
        mujoco.mju_negQuat(inv, cur)
        mujoco.mju_mulQuat(diff, quat, inv)
        mujoco.mju_quat2Vel(err[3:], diff, 1.0)
    return err


def _fk(model: mujoco.MjModel, data: mujoco.MjData) -> None:
    mujoco.mj_kinematics(model, data)
    mujoco.mj_comPos(model, data)  # mj_jacSite reads the com-based dof frames


def solve_ik(
    model: mujoco.MjModel, data: mujoco.MjData, robot: RobotIndex, pos, quat=None, *,
    rng: np.random.Generator, q_init: np.ndarray | None = None, options: IKOptions = IKOptions(),
) -> IKResult:
    """Arm joints putting the TCP at `pos` [m] (and `quat` wxyz, if given) in the world.

    `data` is scratch: its arm qpos is overwritten; other joints (props, fingers) stay and
    define the rest of the kinematic state. Starts from `q_init` (default: data's arm qpos)."""
    pos = np.asarray(pos, float)
    quat = None if quat is None else np.asarray(quat, float) / np.linalg.norm(quat)
    lo, hi = robot.limits[:, 0], robot.limits[:, 1]
    # A target on the limit itself lets the position servo press the joint into its limit
    # constraint, which gives way a fraction of a milliradian: recorded states outside the range.
    margin = np.minimum(options.limit_margin, (hi - lo) / 4)
    lo, hi = lo + margin, hi - margin
    home = np.clip(np.asarray(robot.card.home), lo, hi)
    q = np.array(data.qpos[robot.arm_qpos] if q_init is None else q_init, float)
    rows = slice(0, 6) if quat is not None else slice(0, 3)
    jac_p, jac_r = np.zeros((3, model.nv)), np.zeros((3, model.nv))
    ridge = options.damping**2 * np.eye(6 if quat is not None else 3)
    best, best_cost = q.copy(), np.inf
    for attempt in range(options.restarts + 1):
        if attempt:
            q = rng.uniform(lo, hi)
        attempt_best, since = np.inf, 0
        for _ in range(options.max_iters):
            data.qpos[robot.arm_qpos] = q
            _fk(model, data)
            err = site_error(data, robot.tcp_site, pos, quat)
            pos_err, rot_err = math.sqrt(err[:3].dot(err[:3])), math.sqrt(err[3:].dot(err[3:]))  # as np.linalg.norm
            cost = pos_err + 0.1 * rot_err
            if cost < best_cost:
                best, best_cost, best_errs = q.copy(), cost, (pos_err, rot_err)
            if pos_err <= options.pos_tol and rot_err <= options.rot_tol:
                return IKResult(q, True, pos_err, rot_err, attempt + 1)
            if cost < 0.99 * attempt_best:
                attempt_best, since = cost, 0
            else:
                since += 1
                if since > options.patience:
                    break  # stuck against a limit or in a local minimum: restart
            mujoco.mj_jacSite(model, data, jac_p, jac_r, robot.tcp_site)
            jac = np.vstack([jac_p[:, robot.arm_dofs], jac_r[:, robot.arm_dofs]])[rows]
            dq = _dls_step(jac, err[rows], options.posture_gain * (home - q), ridge)
            # Joints at a limit that the step pushes further are frozen and the step recomputed,
            # so the free joints do the work instead of the clip eating it.
            blocked = ((q <= lo + 1e-9) & (dq < 0)) | ((q >= hi - 1e-9) & (dq > 0))
            if blocked.any():
                jac = jac * ~blocked
                dq = _dls_step(jac, err[rows], options.posture_gain * (home - q) * ~blocked, ridge)
            norm = np.abs(dq).max()
            if norm > options.max_step:
                dq *= options.max_step / norm
            q = np.clip(q + dq, lo, hi)
    data.qpos[robot.arm_qpos] = best
    return IKResult(best, False, float(best_errs[0]), float(best_errs[1]), options.restarts + 1)


def _dls_step(jac: np.ndarray, err: np.ndarray, posture: np.ndarray, ridge: np.ndarray) -> np.ndarray:
    """`ridge`: damping^2 * identity of the task size."""
    inv = jac.T @ np.linalg.inv(jac @ jac.T + ridge)
    return inv @ err + posture - inv @ (jac @ posture)  # posture projected into the null space


def densify(qpath: np.ndarray, max_step: float) -> np.ndarray:
    """Waypoints with no joint moving more than `max_step` [rad] between neighbours."""
    qpath = np.atleast_2d(np.asarray(qpath, float))
    out = [qpath[:1]]
    for a, b in zip(qpath[:-1], qpath[1:], strict=True):
        k = max(1, int(np.ceil(np.abs(b - a).max() / max_step)))
        out.append(a + (b - a) * (np.arange(1, k + 1)[:, None] / k))
    return np.concatenate(out)


def first_collision(
    model: mujoco.MjModel, data: mujoco.MjData, robot: RobotIndex, qpath: np.ndarray, *,
    exclude_bodies: tuple[int, ...] = (), max_step: float = 0.05,
) -> int | None:
    """Index (into the densified path) of the first waypoint where a robot body touches
    anything but `exclude_bodies` (e.g. the grasped object); None when the path is free.

    `data` is scratch: its arm qpos is overwritten; everything else stays where it is."""
    is_robot = np.zeros(model.nbody, bool)
    is_robot[robot.body_ids] = True
    is_excluded = np.zeros(model.nbody, bool)
    is_excluded[list(exclude_bodies)] = True
    for i, q in enumerate(densify(qpath, max_step)):
        data.qpos[robot.arm_qpos] = q
        mujoco.mj_kinematics(model, data)
        mujoco.mj_collision(model, data)  # contacts need only the kinematics (not mj_fwdPosition's inertia)
        if not data.ncon:
            continue
        con = data.contact
        b1, b2 = model.geom_bodyid[con.geom1], model.geom_bodyid[con.geom2]
        robot1 = is_robot[b1]
        other = np.where(robot1, b2, b1)  # the scene side of a robot-scene pair
        if np.any((robot1 != is_robot[b2]) & ~is_excluded[other] & (con.dist < 0)):
            return i
    return None


def path_collides(model, data, robot, qpath, *, exclude_bodies=(), max_step: float = 0.05) -> bool:
    """Whether a joint-space path [rad] hits the scene; see `first_collision`."""
    hit = first_collision(model, data, robot, qpath, exclude_bodies=exclude_bodies, max_step=max_step)
    return hit is not None


def solve_ik_near(
    model: mujoco.MjModel, data: mujoco.MjData, robot: RobotIndex, pos, quat=None, *,
    q_near: np.ndarray, rng: np.random.Generator, tries: int = 40, options: IKOptions = IKOptions(),
) -> IKResult:
    """The solution nearest to `q_near` [rad] (the arm's branch): a solve started at `q_near`
    when it converges, else the nearest of the solves from home and from `tries` random
    configurations, each solution's distance counted with a penalty for ending within
    0.2 rad of a limit."""
    single = IKOptions(**{**options.__dict__, "restarts": 0})
    res = solve_ik(model, data, robot, pos, quat, rng=rng, q_init=q_near, options=single)
    if res.success:
        return res
    lo, hi = robot.limits[:, 0], robot.limits[:, 1]
    best, best_cost, last = None, np.inf, res
    home = np.clip(np.asarray(robot.card.home, float), lo, hi)
    for i in range(tries + 1):
        res = solve_ik(model, data, robot, pos, quat, rng=rng, q_init=home if i == 0 else rng.uniform(lo, hi),
                       options=single)
        last = res if not res.success and (last is None or res.pos_err < last.pos_err) else last
        if res.success:
            room = np.minimum(res.q - lo, hi - res.q)
            cost = float(np.linalg.norm(res.q - q_near) + np.sum(np.maximum(0.0, 0.2 - room)) * 5.0)
            if cost < best_cost:
                best, best_cost = res, cost
    out = best if best is not None else last
    data.qpos[robot.arm_qpos] = out.q
    return out


def nearest_ik(
    model: mujoco.MjModel, data: mujoco.MjData, robot: RobotIndex, pos, quat, *, q: np.ndarray,
    q_ref: np.ndarray, iters: int = 60, gain: float = 0.5, margin: float = 0.1, tol: float = 1e-4,
) -> np.ndarray:
    """From a solution `q` [rad] of the TCP pose (`pos` [m], `quat` wxyz), the configuration
    of the same pose nearest to `q_ref` [rad]: gradient steps on ||q - q_ref||^2 projected into
    the Jacobian's null space, each with the task correction that keeps the pose. Joints stay
    `margin` [rad] inside their limits where `q` already is (a solution that keeps room to move
    is worth a little distance). Converges when a step is below `tol` [rad]; `data` is scratch."""
    pos = np.asarray(pos, float)
    quat = np.asarray(quat, float) / np.linalg.norm(quat)
    lo, hi = robot.limits[:, 0], robot.limits[:, 1]
    lo_m, hi_m = np.minimum(lo + margin, q), np.maximum(hi - margin, q)
    jac_p, jac_r = np.zeros((3, model.nv)), np.zeros((3, model.nv))
    ridge = 1e-6 * np.eye(6)
    q = np.array(q, float)
    q_ref = np.clip(np.asarray(q_ref, float), lo_m, hi_m)
    for _ in range(iters):
        data.qpos[robot.arm_qpos] = q
        _fk(model, data)
        err = site_error(data, robot.tcp_site, pos, quat)
        mujoco.mj_jacSite(model, data, jac_p, jac_r, robot.tcp_site)
        jac = np.vstack([jac_p[:, robot.arm_dofs], jac_r[:, robot.arm_dofs]])
        inv = jac.T @ np.linalg.inv(jac @ jac.T + ridge)
        pull = gain * (q_ref - q)
        dq = inv @ err + pull - inv @ (jac @ pull)
        q_new = np.clip(q + dq, lo_m, hi_m)
        if np.abs(q_new - q).max() < tol:
            q = q_new
            break
        q = q_new
    data.qpos[robot.arm_qpos] = q
    _fk(model, data)
    return q
