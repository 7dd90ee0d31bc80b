"""Assembling a skill's plan: IK waypoints, checked joint paths, gripper holds.

Motions are of two kinds: `move` (transit: the straight joint path to a configuration, or a
planned path around an obstacle) and `line` (approach, grasp and retreat: the TCP on a
straight Cartesian line). IK is always seeded from where the arm is, so a skill stays on
one arm branch. Every path is timed by skills.timing under the profile's joint limits.

A `PlanBuilder` starts from the environment's last commanded targets (so consecutive
skills join without a jump) and appends phases. The first infeasible step raises
`Infeasible`, which `run_skill` turns into a plan carrying a `SkillFailure`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import mujoco
import numpy as np

from demoforge.sim import IKOptions, gripper_closedness, nearest_ik, solve_ik, solve_ik_near
from demoforge.sim.ik import densify
from demoforge.sim.linkage import linkage_positions
from demoforge.skills import geometry as geo
from demoforge.skills.context import PHASES, SkillContext, SkillFailure, SkillPlan, failed
from demoforge.skills.timing import JointLimits, joint_limits, time_path
from demoforge.skills.transit import plan_around


IK_TURN_STEP = math.radians(30.0)  # largest TCP turn solved in one IK call
WALK_SPLITS = 8  # a stalled IK walk step is halved down to 1/WALK_SPLITS of its length [-]
LINE_STEP = 0.005  # TCP spacing of the IK samples of a straight Cartesian move [m]
LINE_TURN = math.radians(3.0)  # TCP turn between those samples, at most [rad]
# Tight tolerances: the samples' IK error is noise that the timing would see as jerk.
LINE_IK = IKOptions(pos_tol=1e-6, rot_tol=1e-5, max_iters=100, restarts=0, patience=20, posture_gain=0.0)
POLISH_IK = IKOptions(restarts=0, posture_gain=0.0)  # brings a slid solution back within tolerance
LINE_JUMP = 0.1  # largest joint change between neighbouring samples before the line counts as broken [rad]
LINE_FALLBACK = 6.0  # most joint travel (sum over joints) accepted for a straight move's fallback [rad]
MIN_RISE = 0.03  # lowest pre-pose accepted above a grasp or placement when the full height is out of reach [m]
LINE_DETOUR = 1.5  # joint travel of a line over its endpoints' distance beyond which it counts as a detour [-]
PLAN_REFINES = 2  # times a planned transit whose timed path clips an obstacle is planned again, each twice as finely checked
# A held block resting on its support overlaps it by ~0.02 mm; only deeper overlaps are hits.
HELD_PENETRATION = 0.001  # [m]


class Infeasible(Exception):
    """Raised inside a skill when a step has no plan; carries the structured failure."""

    def __init__(self, failure: SkillFailure):
        super().__init__(failure.message)
        self.failure = failure


class PlanBuilder:
    """Accumulates (targets, gripper, phase) ticks for one skill; see the module docstring."""

    def __init__(self, ctx: SkillContext, rng: np.random.Generator):
        self.ctx, self.rng = ctx, rng
        robot, data = ctx.robot, ctx.data
        self.q = data.ctrl[robot.arm_actuators].astype(float).copy()
        self._q0 = self.q.copy()
        c_open, c_closed = robot.gripper_ctrl
        self.grip = float(np.clip((data.ctrl[robot.gripper_actuator] - c_open) / (c_closed - c_open), 0.0, 1.0))
        self.dt = 1.0 / ctx.settings.control_hz
        self._q, self._grip, self._phase = [], [], []
        self.neutral_yaw = _neutral_yaw(ctx)
        # (block name, tcp_p_block [m], tcp_R_block) while a block is in the hand: moves then
        # also check the block, carried rigidly, against the scene.
        self.held: tuple[str, np.ndarray, np.ndarray] | None = None
        self.held_drop = 0.0  # [m] the held block is checked this much lower (a clearance below it)
        self.padding = 0.0  # [m] the robot counts as touching what comes this close (transits)
        # Finger closedness assumed by the collision checks (None: the fingers as they are now).
        self.check_grip: float | None = None
        self.detours = 0  # transits planned around an obstacle so far (the straight path collided)
        self.limits = joint_limits(robot.card, ctx.settings.profile)
        self._is_robot = np.zeros(ctx.model.nbody, bool)
        self._is_robot[robot.body_ids] = True
        self._robot_geoms = np.flatnonzero(self._is_robot[ctx.model.geom_bodyid])
        ctx.scratch.qpos[:] = data.qpos
        ctx.scratch.qvel[:] = 0.0
        mujoco.mj_forward(ctx.model, ctx.scratch)

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

    def move(self, q_target: np.ndarray, phase: str, *, exclude: tuple[str, ...] = (),
             gripper: float | None = None, clearance: float = 0.0) -> None:
        """Transit to `q_target`: the straight joint path when neither the robot nor a held
        block touches the scene (props named in `exclude` aside) along it, else a path planned
        around the obstacle (skills.transit); timed under the profile's limits. The robot is
        kept `transit_padding` clear of the scene where the ends leave room (`_paddings`), or
        half that on a straight path, rather than planned around. With
        `clearance` [m], a held block is checked that much lower (`_free_drop`): it passes at
        least that high over whatever it crosses."""
        ctx = self.ctx
        bodies = tuple(ctx.props[name] for name in exclude)
        q_target = np.asarray(q_target, float)
        saved = self.check_grip
        self.held_drop = self._free_drop(clearance, bodies)
        if gripper is not None:  # the fingers move on the way: checked at the wider of the two openings
            self.check_grip = min(gripper_closedness(ctx.robot, ctx.data.qpos) if saved is None else saved, gripper)
        try:
            paddings = self._paddings(q_target, bodies)
            # A straight path half the padding clear comes before a detour the whole padding clear.
            for padding, plan in [(p, False) for p in paddings[1:-1]] + [(p, True) for p in paddings]:
                self.padding = padding
                path, ticks, what = self._route(q_target, bodies, plan=plan)
                if path is not None:
                    break
            else:
                raise Infeasible(SkillFailure("collision", phase, f"planned {phase} path hits {what}; no path "
                                                                  "around it was found"))
        finally:
            self.check_grip = saved if gripper is None else gripper
            self.held_drop = self.padding = 0.0
        if gripper is not None:
            self.grip = gripper
        self._append(time_path(path, self.limits, self.dt) if ticks is None else ticks, self.grip, phase)
        self.q = q_target.copy()

    def _route(self, q_target: np.ndarray, bodies: tuple[int, ...], *,
               plan: bool = True) -> tuple[np.ndarray | None, np.ndarray | None, str]:
        """(joint waypoints, their timed ticks or None when not timed yet, what the straight path
        hits) from the targets now to `q_target` under the checks in force; no waypoints when
        the straight path hits and no path around it was found."""
        path = np.stack([self.q, q_target])
        what = self._path_hits(path, bodies)
        if not what:
            return path, None, ""
        resolution = self.ctx.settings.collision_step
        for _ in range(PLAN_REFINES + 1) if plan else ():
            planned = plan_around(self.q, q_target, lambda q: not self._hits(q, bodies), self.ctx.robot.limits,
                                  rng=self.rng, resolution=resolution)
            self._reset_scratch()
            if planned is None:
                break
            # The planner checks its segments every `resolution`; the timed path is checked as it
            # will run, and planned again finer when it clips an obstacle in between.
            ticks = time_path(planned, self.limits, self.dt)
            if not self._path_hits(np.vstack([self.q[None], ticks]), bodies):
                self.detours += 1
                return planned, ticks, what
            resolution /= 2
        return None, None, what

    def _paddings(self, q_target: np.ndarray, bodies: tuple[int, ...]) -> list[float]:
        """The clearances [m] a transit tries to keep the robot from the scene, in order:
        `transit_padding` and half of it where both ends are that clear, then none (a transit
        that starts or ends close to a prop, or has no padded way, is checked as before)."""
        pad = self.ctx.settings.transit_padding
        out = []
        try:
            for padding in (pad, pad / 2) if pad > 0 else ():
                self.padding = padding
                if not self._hits(self.q, bodies) and not self._hits(q_target, bodies):
                    out.append(padding)
        finally:
            self.padding = 0.0
            self._reset_scratch()
        return [*out, 0.0]

    def _free_drop(self, clearance: float, bodies: tuple[int, ...]) -> float:
        """How much lower [m] a transit checks the held block, so it passes that high over
        whatever it crosses: `clearance`, or half as much, whichever leaves the start free (a
        block held low in the hand, just lifted); 0 when neither does."""
        try:
            for drop in (clearance, clearance / 2) if self.held is not None and clearance > 0 else ():
                self.held_drop = drop
                if not self._hits(self.q, bodies):
                    return drop
            return 0.0
        finally:
            self.held_drop = 0.0
            self._reset_scratch()

    def line(self, pos, rot: np.ndarray, phase: str, *, exclude: tuple[str, ...] = (),
             gripper: float | None = None) -> np.ndarray:
        """Move the TCP along the straight line from its pose now to `pos` [m] with
        orientation `rot` (turning uniformly on the way): IK of TCP poses every LINE_STEP,
        each seeded by the last solution; checked for contacts like `move`. Where the arm
        cannot follow the line smoothly (a joint limit on the way makes the others swing),
        the joints move straight to the nearest solution at the end instead, if it is within
        LINE_FALLBACK of joint travel. Returns the end configuration [rad]."""
        ctx = self.ctx
        pos = np.asarray(pos, float)
        path, smooth = self.line_path(pos, rot)
        if not smooth and len(path) > 1 and self._rise(path) >= MIN_RISE and self._straight(path):
            smooth = True  # up out of reach (near the base): as high as the arm gets straight
        ticks = time_path(path, self.limits, self.dt) if smooth else None
        if ticks is not None:
            direct = time_path(path[[0, -1]], self.limits, self.dt)
            if len(ticks) > 2 * len(direct) + round(0.5 / self.dt):
                ticks = None  # the line bends so sharply in joint space that it would crawl
        if ticks is None:
            q_end = path[-1] if smooth else self.ik(pos, rot, phase)
            if np.abs(q_end - self.q).sum() > LINE_FALLBACK:
                raise Infeasible(SkillFailure("ik", phase, (
                    f"the arm cannot move the TCP straight to {np.round(pos, 4).tolist()} [m] without swinging "
                    f"its joints {np.abs(q_end - self.q).sum():.1f} rad")))
            path = np.stack([self.q, q_end])
            ticks = time_path(path, self.limits, self.dt)
        what = self._path_hits(path, tuple(ctx.props[name] for name in exclude))
        if what:
            raise Infeasible(SkillFailure("collision", phase, f"the straight {phase} move hits {what}"))
        self._append(ticks, self.grip if gripper is None else gripper, phase)
        self.q = path[-1].copy()
        return self.q

    def curve(self, points: np.ndarray, rot: np.ndarray, phase: str, *, exclude: tuple[str, ...] = (),
              max_speed: float | None = None) -> np.ndarray:
        """Move the TCP through `points` [m] (n x 3, each at most LINE_STEP from the last) at
        orientation `rot`, as one timed move, its TCP no faster than `max_speed` [m/s] when
        given: IK of each point seeded by the last, checked for contacts like `move` (props in
        `exclude` aside). Returns the end configuration [rad]."""
        ctx = self.ctx
        points = np.asarray(points, float)
        quat = geo.quat(rot)
        path = self._trace(self.q, [(point, quat) for point in points])
        if len(path) <= len(points):
            raise Infeasible(SkillFailure("ik", phase, (
                f"the arm cannot follow the {phase} path through {np.round(points[len(path) - 1], 4).tolist()} [m]")))
        what = self._path_hits(path, tuple(ctx.props[name] for name in exclude))
        if what:
            raise Infeasible(SkillFailure("collision", phase, f"the {phase} path hits {what}"))
        limits = self.limits
        ticks = time_path(path, limits, self.dt)
        for _ in range(3 if max_speed else 0):
            tcp = np.array([self.tcp_pose(q)[0] for q in np.vstack([path[:1], ticks])])
            speed = float(np.linalg.norm(np.diff(tcp, axis=0), axis=1).max()) / self.dt
            if speed <= max_speed * 1.02:
                break
            f = max_speed / speed  # lower velocity and acceleration limits; jerk's as it was (the IK
            limits = JointLimits(limits.vel * f, limits.acc * f, limits.jerk)  # samples' noise would crawl)
            ticks = time_path(path, limits, self.dt)
        self._append(ticks, self.grip, phase)
        self.q = path[-1].copy()
        return self.q

    def descend(self, pos, rot: np.ndarray, above: float, phases: tuple[str, str], *,
                exclude: tuple[str, ...] = (), gripper: float | None = None, clearance: float = 0.0) -> np.ndarray:
        """Transit to `above` [m] straight over the TCP pose (`pos` [m], `rot`), then come
        straight down to it. The line is first traced upwards from the nearest solution at
        the bottom, so the arm arrives at the pre-pose on a branch that can follow the line
        down (tracing down from above can run into a joint limit near the base); then
        downwards from the nearest solution above; else the joints move straight between
        the two poses' solutions. `phases`: (transit phase, line phase). Returns the end
        configuration [rad]. `clearance` [m]: the transit's, for a held block (`move`)."""
        pos = np.asarray(pos, float)
        pre = pos + above * geo.UP
        bodies = tuple(self.ctx.props[name] for name in exclude)
        before = self.check_grip
        if gripper is not None:  # the line is checked with the fingers as the transit leaves them
            self.check_grip = gripper
        q_end = self.ik(pos, rot, phases[0])  # unreachable: the approach fails
        path, smooth = self.line_path(pre, rot, start=q_end)
        if not smooth and len(path) > 1 and self._rise(path) >= MIN_RISE and self._straight(path):
            smooth = True  # the pre-pose is out of reach near the base: come down from as high as the arm gets
        path = path[::-1]
        if not smooth:
            path, smooth = self.line_path(pos, rot, start=self.ik(pre, rot, phases[0]))
        if smooth:
            ticks = time_path(path, self.limits, self.dt)
            smooth = len(ticks) <= 2 * len(time_path(path[[0, -1]], self.limits, self.dt)) + round(0.5 / self.dt)
        if not smooth or self._path_hits(path, bodies):
            q_pre = self._ik_lowering(pos, rot, above, phases[0])
            path = np.stack([q_pre, self.ik(pos, rot, phases[1], seed=q_pre)])
            ticks = time_path(path, self.limits, self.dt)
            what = self._path_hits(path, bodies)
            if what:
                raise Infeasible(SkillFailure("collision", phases[1], f"the straight {phases[1]} move hits {what}"))
        self.check_grip = before
        self.move(path[0], phases[0], exclude=exclude, gripper=gripper, clearance=clearance)
        self._append(ticks, self.grip, phases[1])
        self.q = path[-1].copy()
        return self.q

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

    def _reset_scratch(self) -> None:
        self.ctx.scratch.qpos[:] = self.ctx.data.qpos
        mujoco.mj_forward(self.ctx.model, self.ctx.scratch)

    def _path_hits(self, qpath: np.ndarray, bodies: tuple[int, ...]) -> str:
        """What the robot (or a held block) first touches along `qpath`; "" when nothing."""
        try:
            for q in densify(qpath, self.ctx.settings.collision_step):
                what = self._hits(q, bodies)
                if what:
                    return what
            return ""
        finally:
            self._reset_scratch()

    def _hits(self, q: np.ndarray, bodies: tuple[int, ...]) -> str:
        """Names of what the robot touches at arm joints `q` (bodies aside), or what a held
        block carried rigidly by the TCP penetrates by more than HELD_PENETRATION; "" when
        nothing. Overwrites scratch."""
        ctx = self.ctx
        m, d, robot = ctx.model, ctx.scratch, ctx.robot
        d.qpos[robot.arm_qpos] = q
        if self.check_grip is not None:
            d.qpos[robot.finger_qpos] = robot.finger_open + self.check_grip * (robot.finger_closed - robot.finger_open)
            if robot.linkage_qpos.size:  # a linkage gripper's pads hang below its passive joints
                d.qpos[robot.linkage_qpos] = linkage_positions(robot.linkage_closedness, robot.linkage_positions,
                                                               self.check_grip)
        mujoco.mj_kinematics(m, d)
        if self.held is not None:
            name, tcp_p_block, tcp_R_block = self.held
            body = ctx.props[name]
            adr = int(m.jnt_qposadr[m.body_jntadr[body]])
            tcp_pos, tcp_rot = d.site_xpos[robot.tcp_site], d.site_xmat[robot.tcp_site].reshape(3, 3)
            d.qpos[adr:adr + 3] = tcp_pos + tcp_rot @ tcp_p_block - self.held_drop * geo.UP
            d.qpos[adr + 3:adr + 7] = geo.quat(tcp_rot @ tcp_R_block)
            mujoco.mj_kinematics(m, d)
        if self.padding > 0:
            # The robot's geoms report contacts from `padding` away. The model is the live one:
            # its margins are put back at once, before anything steps it.
            margin = m.geom_margin
            kept = margin[self._robot_geoms].copy()
            margin[self._robot_geoms] = np.maximum(kept, self.padding)
            try:
                mujoco.mj_collision(m, d)
            finally:
                margin[self._robot_geoms] = kept
        else:
            mujoco.mj_collision(m, d)
        if not d.ncon:
            return ""
        con = d.contact
        b1, b2 = m.geom_bodyid[con.geom1], m.geom_bodyid[con.geom2]
        robot1, robot2 = self._is_robot[b1], self._is_robot[b2]
        other = np.where(robot1, b2, b1)
        held = -1 if self.held is None else ctx.props[self.held[0]]
        # the block in the hand is touched by the fingers: padding does not apply to it
        hit = (robot1 != robot2) & ~np.isin(other, bodies) & (con.dist < np.where(other == held, 0.0, self.padding))
        if self.held is not None:
            other_h = np.where(b1 == held, b2, b1)
            hit |= ((b1 == held) | (b2 == held)) & (con.dist < -HELD_PENETRATION) & ~self._is_robot[other_h]
            other = np.where(hit & ((b1 == held) | (b2 == held)), other_h, other)
        if not hit.any():
            return ""
        return ", ".join(sorted({m.body(int(b)).name for b in other[hit]}))

    def hold(self, seconds: float, phase: str, gripper: float) -> None:
        """Keep the arm still for `seconds` [s] while commanding `gripper` closedness."""
        ticks = max(1, round(seconds / self.dt))
        self._append(np.repeat(self.q[None], ticks, axis=0), gripper, phase)
        self.grip = gripper
        if self.check_grip is not None:
            self.check_grip = min(self.check_grip, gripper)  # opening widens the checked fingers; closing on a block does not narrow them
        if gripper == 0.0:
            self.held = None

    def mark(self) -> tuple:
        """A point to `rollback` to when a candidate (grasp, placement) turns out infeasible."""
        return len(self._q), self.q.copy(), self.grip, self.held, self.check_grip

    def rollback(self, mark: tuple) -> None:
        n, self.q, self.grip, self.held, self.check_grip = mark
        del self._q[n:], self._grip[n:], self._phase[n:]

    def travel(self) -> float:
        """Joint travel [rad] of everything appended so far (sum over joints of path lengths),
        rounded to 0.01 rad so that float noise cannot decide between candidates."""
        if not self._q:
            return 0.0
        q = np.vstack([self._q0, *self._q])
        return round(float(np.abs(np.diff(q, axis=0)).sum()), 2)

    def ticks(self) -> int:
        return sum(len(q) for q in self._q)

    def snapshot(self) -> tuple:
        """Everything appended so far, to `restore` after trying other candidates."""
        return list(self._q), list(self._grip), list(self._phase), self.q.copy(), self.grip, self.held, self.check_grip

    def restore(self, snap: tuple) -> None:
        qs, grips, phases, self.q, self.grip, self.held, self.check_grip = snap
        self._q, self._grip, self._phase = list(qs), list(grips), list(phases)

    def plan(self, skill: str, args: tuple[str, ...], params: dict,
             block_target: tuple[float, ...] | None = None) -> SkillPlan:
        q = np.concatenate(self._q) if self._q else np.zeros((0, len(self.q)))
        limit = self.ctx.settings.max_s
        if len(q) * self.dt > limit:
            raise Infeasible(SkillFailure("timeout", PHASES[self._phase[-1][0]], (
                f"plan lasts {len(q) * self.dt:.1f} s, more than max_s = {limit} s")))
        return SkillPlan(skill, args, q, np.concatenate(self._grip), np.concatenate(self._phase).astype(np.int8),
                         params, None, block_target, self.ctx.settings.control_hz)

    def _append(self, qs: np.ndarray, gripper: float, phase: str) -> None:
        if not len(qs):
            return
        self._q.append(qs)
        self._grip.append(np.full(len(qs), float(gripper)))
        self._phase.append(np.full(len(qs), PHASES.index(phase), np.int8))


def _neutral_yaw(ctx: SkillContext) -> float:
    """Yaw [rad] of a top-down pinch axis with the last arm joint at mid-range and the others
    at home: grasp yaws near it leave the wrist room to turn both ways."""
    robot, scratch = ctx.robot, ctx.scratch
    q = np.asarray(robot.card.home, float).copy()
    q[-1] = robot.limits[-1].mean()
    scratch.qpos[robot.arm_qpos] = q
    mujoco.mj_kinematics(ctx.model, scratch)
    pinch = scratch.site_xmat[robot.tcp_site].reshape(3, 3)[:, 1]
    return math.atan2(pinch[1], pinch[0])


SkillBody = Callable[[PlanBuilder, tuple[str, ...], dict], SkillPlan]


def run_skill(name: str, body: SkillBody, ctx: SkillContext, args: tuple[str, ...],
              rng: np.random.Generator) -> SkillPlan:
    """Plan skill `name`; an `Infeasible` step becomes a failed plan keeping the draws so far."""
    params: dict = {}
    try:
        return body(PlanBuilder(ctx, rng), tuple(args), params)
    except Infeasible as exc:
        return failed(name, tuple(args), len(ctx.robot.arm_qpos), params, exc.failure)
