"""IK chains of a skill's plan: solutions seeded from where the arm is, and straight TCP lines
traced pose by pose (a `PlanBuilder` concern; see `skills.builder`).

`IKChains` is a mixin of `PlanBuilder`: it reads the builder's `ctx` (model, scratch data, robot),
`rng` and current targets `q`, and raises `Infeasible` where no solution exists.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from demoforge.sim import IKOptions, nearest_ik, solve_ik, solve_ik_near
from demoforge.skills import geometry as geo
from demoforge.skills.context import Infeasible, SkillFailure

IK_TURN_STEP = math.radians(30.0)  # largest TCP turn solved in one IK call
WALK_SPLITS = 8  # a stalled IK walk step is halved down to 1/WALK_SPLITS of its length [-]
LINE_STEP = 0.005  # TCP spacing of the IK samples of a straight Cartesian move [m]
LINE_TURN = math.radians(3.0)  # TCP turn between those samples, at most [rad]
# Tight tolerances: the samples' IK error is noise that the timing would see as jerk.
LINE_IK = IKOptions(pos_tol=1e-6, rot_tol=1e-5, max_iters=100, restarts=0, patience=20, posture_gain=0.0)
POLISH_IK = IKOptions(restarts=0, posture_gain=0.0)  # brings a slid solution back within tolerance
LINE_JUMP = 0.1  # largest joint change between neighbouring samples before the line counts as broken [rad]
MIN_RISE = 0.03  # lowest pre-pose accepted above a grasp or placement when the full height is out of reach [m]
LINE_DETOUR = 1.5  # joint travel of a line over its endpoints' distance beyond which it counts as a detour [-]


class IKChains:
    """IK from the arm's branch and straight-line joint paths (mixed into `PlanBuilder`)."""

    def tcp_pose(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(position [m], world_R_tcp) of the TCP at arm joints `q` [rad]."""
        ctx = self.ctx
        saved = ctx.scratch.qpos.copy()
        ctx.scratch.qpos[ctx.robot.arm_qpos] = q
        mujoco.mj_kinematics(ctx.model, ctx.scratch)
        pose = (ctx.scratch.site_xpos[ctx.robot.tcp_site].copy(),
                ctx.scratch.site_xmat[ctx.robot.tcp_site].reshape(3, 3).copy())
        ctx.scratch.qpos[:] = saved
        return pose

    def ik(self, pos, rot: np.ndarray, phase: str, *, seed: np.ndarray | None = None) -> np.ndarray:
        """Arm joints putting the TCP at `pos` [m] with orientation `rot` (world_R_tcp), on the
        branch of `seed` (default: the current targets).

        The TCP is walked from the seed's pose to the target in steps of at most IK_TURN_STEP,
        each solve seeded by the last, so the answer is the nearest solution and the joint
        path to it does not swing the wrist around (a stalled step is retried shorter); when the
        walk still stalls, the nearest of several fresh solves (joint-limit room counted) is
        taken. Every solution is then slid along the arm's self-motion towards the seed
        (sim.nearest_ik), and the one nearest the seed wins."""
        ctx = self.ctx
        seed = np.asarray(self.q if seed is None else seed, float)
        saved = ctx.scratch.qpos.copy()
        pos0, rot0 = self.tcp_pose(seed)
        turn = geo.angle_between(rot0, rot)
        steps = max(1, math.ceil(turn / IK_TURN_STEP), math.ceil(float(np.linalg.norm(np.asarray(pos) - pos0)) / 0.1))
        q, single = seed, IKOptions(restarts=0)
        done, step = 0.0, 1.0 / steps
        while done < 1.0:
            f = min(1.0, done + step)
            res = solve_ik(ctx.model, ctx.scratch, ctx.robot, pos0 + f * (np.asarray(pos) - pos0),
                           geo.quat(geo.slerp(rot0, rot, f)), rng=self.rng, q_init=q, options=single)
            if res.success:
                q, done = res.q, f
            elif step > 1.0 / (WALK_SPLITS * steps):
                step /= 2  # a stalled step is retried shorter before the walk gives up
            else:
                break
        found = [res] if res.success else []
        # A turn about the approach axis is the last joint's alone when that joint's axis is the
        # approach axis (a top-down hand): seeded with it, IK lands on that least-travel solution,
        # which the walk's least-norm steps (spreading the turn over every joint) miss.
        for q_twist in self._twist_seeds(seed, rot0, rot):
            twist = solve_ik(ctx.model, ctx.scratch, ctx.robot, pos, geo.quat(rot), rng=self.rng, q_init=q_twist,
                             options=single)
            if twist.success:
                found.append(twist)
        if not found:
            found = [solve_ik_near(ctx.model, ctx.scratch, ctx.robot, pos, geo.quat(rot), q_near=seed, rng=self.rng)]
        found += [self._nearest(r, pos, rot, seed) for r in found]
        res = min(found, key=lambda r: float(np.abs(r.q - seed).sum()))
        ctx.scratch.qpos[:] = saved
        if not res.success:
            raise Infeasible(SkillFailure("ik", phase, (
                f"no IK solution for the TCP at {np.round(pos, 4).tolist()} [m] "
                f"(best: {res.pos_err * 1000:.1f} mm, {math.degrees(res.rot_err):.1f} deg off)")))
        return res.q

    def _nearest(self, res, pos, rot: np.ndarray, seed: np.ndarray):
        """`res` slid along the arm's self-motion to the solution of the same pose nearest to
        `seed` (sim.nearest_ik), polished to the tolerance; `res` itself when that fails."""
        if not res.success:
            return res
        ctx = self.ctx
        q = nearest_ik(ctx.model, ctx.scratch, ctx.robot, pos, geo.quat(rot), q=res.q, q_ref=seed)
        polished = solve_ik(ctx.model, ctx.scratch, ctx.robot, pos, geo.quat(rot), rng=self.rng, q_init=q,
                            options=POLISH_IK)
        return polished if polished.success else res

    def _twist_seeds(self, seed: np.ndarray, rot0: np.ndarray, rot: np.ndarray) -> list[np.ndarray]:
        """`seed` with the last joint turned by the twist about the TCP's approach axis from
        `rot0` to `rot` (either sign, inside the limits); none when the approach axes differ."""
        if float(rot0[:, 2] @ rot[:, 2]) < math.cos(math.radians(10.0)):
            return []
        rel = rot0.T @ rot
        theta = math.atan2(rel[1, 0], rel[0, 0])
        if abs(theta) < 1e-3:
            return []
        lo, hi = self.ctx.robot.limits[-1]
        out = []
        for sign in (1.0, -1.0):
            q = seed.copy()
            q[-1] += sign * theta
            if lo < q[-1] < hi:
                out.append(q)
        return out

    def _ik_lowering(self, pos: np.ndarray, rot: np.ndarray, above: float, phase: str) -> np.ndarray:
        """IK of the pose `above` [m] over (`pos`, `rot`), or, out of reach near the base, of
        the same pose half as high, then MIN_RISE high."""
        heights = [above] + [h for h in (above / 2, MIN_RISE) if h < above]
        for k, h in enumerate(heights):
            try:
                return self.ik(pos + h * geo.UP, rot, phase)
            except Infeasible:
                if k == len(heights) - 1:
                    raise
        raise AssertionError("unreachable")

    def line_path(self, pos: np.ndarray, rot: np.ndarray, start: np.ndarray | None = None) -> tuple[np.ndarray, bool]:
        """(joint path [rad] of the TCP's straight line to (`pos`, `rot`), whether it is
        whole and smooth): not when the IK chain breaks (the path then ends where it broke)
        or detours (joint travel over LINE_DETOUR times the endpoints' distance). From
        `start` [rad] (default: the current targets)."""
        start = self.q if start is None else np.asarray(start, float)
        pos0, rot0 = self.tcp_pose(start)
        n = max(1, math.ceil(float(np.linalg.norm(pos - pos0)) / LINE_STEP),
                math.ceil(geo.angle_between(rot0, rot) / LINE_TURN))
        path = self._trace(start, [(pos0 + f * (pos - pos0), geo.quat(geo.slerp(rot0, rot, f)))
                                   for f in np.arange(1, n + 1) / n])
        return path, len(path) == n + 1 and self._straight(path)

    def _trace(self, start: np.ndarray, poses: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """Joint path [rad] from `start` through the TCP `poses` ((position [m], wxyz quaternion)
        each), every IK solve seeded by the last; it ends early where a solve fails or jumps by
        more than LINE_JUMP, so it is whole when it has len(poses) + 1 rows."""
        ctx = self.ctx
        path, q = [start], start
        saved = ctx.scratch.qpos.copy()
        try:
            for point, quat in poses:
                res = solve_ik(ctx.model, ctx.scratch, ctx.robot, point, quat, rng=self.rng, q_init=q, options=LINE_IK)
                if not res.success or np.abs(res.q - q).max() > LINE_JUMP:
                    break
                q = res.q
                path.append(q)
        finally:
            ctx.scratch.qpos[:] = saved
        return np.array(path)

    @staticmethod
    def _straight(path: np.ndarray) -> bool:
        """Whether a line's joint path travels at most LINE_DETOUR times its endpoints' distance."""
        travel = float(np.abs(np.diff(path, axis=0)).sum())
        return travel <= LINE_DETOUR * float(np.abs(path[-1] - path[0]).sum()) + 0.05

    def _rise(self, path: np.ndarray) -> float:
        """Height [m] the TCP gains from the first to the last configuration of `path`."""
        return float(self.tcp_pose(path[-1])[0][2] - self.tcp_pose(path[0])[0][2])
