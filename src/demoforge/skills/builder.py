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

from demoforge.sim import gripper_closedness
from demoforge.skills import geometry as geo
from demoforge.skills.collide import CollisionChecks
from demoforge.skills.context import PHASES, Infeasible, SkillContext, SkillFailure, SkillPlan, failed
from demoforge.skills.ik_chain import MIN_RISE, IKChains
from demoforge.skills.timing import JointLimits, joint_limits, time_path
from demoforge.skills.transit import plan_around


LINE_FALLBACK = 6.0  # most joint travel (sum over joints) accepted for a straight move's fallback [rad]
PLAN_REFINES = 2  # times a planned transit whose timed path clips an obstacle is planned again, each twice as finely checked


class PlanBuilder(IKChains, CollisionChecks):
    """Accumulates (targets, gripper, phase) ticks for one skill; see the module docstring. Its IK
    chains are `skills.ik_chain.IKChains`, its collision checks `skills.collide.CollisionChecks`."""

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
