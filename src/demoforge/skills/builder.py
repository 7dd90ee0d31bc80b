"""Assembling a skill's plan: IK waypoints, checked joint paths, gripper holds.

A `PlanBuilder` starts from the environment's last commanded targets (so consecutive
skills join without a jump) and appends phases. The first infeasible step raises
`Infeasible`, which `run_skill` turns into a plan carrying a `SkillFailure`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import mujoco
import numpy as np

from demoforge.sim import IKOptions, first_collision, solve_ik
from demoforge.skills import geometry as geo
from demoforge.skills.context import PHASES, SkillContext, SkillFailure, SkillPlan, failed
from demoforge.skills.motion import densify, segment


IK_TURN_STEP = math.radians(30.0)  # largest TCP turn solved in one IK call
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
        c_open, c_closed = robot.gripper_ctrl
        self.grip = float(np.clip((data.ctrl[robot.gripper_actuator] - c_open) / (c_closed - c_open), 0.0, 1.0))
        self.dt = 1.0 / ctx.settings.control_hz
        self._q, self._grip, self._phase = [], [], []
        self.neutral_yaw = _neutral_yaw(ctx)
        # (block name, tcp_p_block [m], tcp_R_block) while a block is in the hand: moves then
        # also check the block, carried rigidly, against the scene.
        self.held: tuple[str, np.ndarray, np.ndarray] | None = None
        ctx.scratch.qpos[:] = data.qpos
        ctx.scratch.qvel[:] = 0.0
        mujoco.mj_forward(ctx.model, ctx.scratch)

    def ik(self, pos, rot: np.ndarray, phase: str, *, seed: np.ndarray | None = None) -> np.ndarray:
        """Arm joints putting the TCP at `pos` [m] with orientation `rot` (world_R_tcp).

        Large turns are solved in steps of at most IK_TURN_STEP from the seed's TCP pose,
        each seeded by the last, so the answer stays on the seed's branch of solutions and
        the straight joint path to it does not swing the wrist around."""
        ctx = self.ctx
        seed = np.asarray(self.q if seed is None else seed, float)
        saved = ctx.scratch.qpos.copy()
        ctx.scratch.qpos[ctx.robot.arm_qpos] = seed
        mujoco.mj_kinematics(ctx.model, ctx.scratch)
        pos0 = ctx.scratch.site_xpos[ctx.robot.tcp_site].copy()
        rot0 = ctx.scratch.site_xmat[ctx.robot.tcp_site].reshape(3, 3).copy()
        turn = geo.angle_between(rot0, rot)
        steps = max(1, math.ceil(turn / IK_TURN_STEP))
        q = seed
        for i in range(1, steps + 1):
            f = i / steps
            res = solve_ik(ctx.model, ctx.scratch, ctx.robot, pos0 + f * (np.asarray(pos) - pos0),
                           geo.quat(geo.slerp(rot0, rot, f)), rng=self.rng, q_init=q, options=IKOptions(restarts=6))
            q = res.q
        if not res.success:
            # The chain can wander into a joint limit; a fresh solve with the full restart
            # budget (from home, then random configurations) is the fallback.
            res = solve_ik(ctx.model, ctx.scratch, ctx.robot, pos, geo.quat(rot), rng=self.rng,
                           q_init=np.asarray(ctx.robot.card.home, float))
        ctx.scratch.qpos[:] = saved
        if not res.success:
            raise Infeasible(SkillFailure("ik", phase, (
                f"no IK solution for the TCP at {np.round(pos, 4).tolist()} [m] "
                f"(best: {res.pos_err * 1000:.1f} mm, {math.degrees(res.rot_err):.1f} deg off)")))
        return res.q

    def move(self, q_target: np.ndarray, phase: str, *, exclude: tuple[str, ...] = (),
             gripper: float | None = None) -> None:
        """A rest-to-rest joint segment to `q_target`, checked for robot-scene contacts except
        with the props named in `exclude`."""
        ctx = self.ctx
        bodies = tuple(ctx.props[name] for name in exclude)
        saved = ctx.scratch.qpos.copy()
        hit = first_collision(ctx.model, ctx.scratch, ctx.robot, np.stack([self.q, q_target]),
                              exclude_bodies=bodies, max_step=ctx.settings.collision_step)
        if hit is not None:
            what = self._contact_names(bodies)
            ctx.scratch.qpos[:] = saved
            mujoco.mj_forward(ctx.model, ctx.scratch)
            raise Infeasible(SkillFailure("collision", phase, f"planned {phase} path hits {what}"))
        if self.held is not None:
            what = self._held_hits(np.stack([self.q, q_target]))
            if what:
                ctx.scratch.qpos[:] = saved
                mujoco.mj_forward(ctx.model, ctx.scratch)
                raise Infeasible(SkillFailure("collision", phase, f"held block {self.held[0]!r} would hit {what}"))
        ctx.scratch.qpos[:] = saved
        mujoco.mj_forward(ctx.model, ctx.scratch)
        qs = segment(self.q, q_target, ctx.settings.profile, self.dt)
        self._append(qs, self.grip if gripper is None else gripper, phase)
        self.q = np.asarray(q_target, float).copy()

    def _held_hits(self, qpath: np.ndarray) -> str:
        """Names of what the held block, carried rigidly by the TCP along `qpath`, penetrates
        by more than HELD_PENETRATION (robot bodies aside); "" when nothing."""
        ctx = self.ctx
        m, d, robot = ctx.model, ctx.scratch, ctx.robot
        name, tcp_p_block, tcp_R_block = self.held
        body = ctx.props[name]
        adr = int(m.jnt_qposadr[m.body_jntadr[body]])
        is_robot = np.zeros(m.nbody, bool)
        is_robot[robot.body_ids] = True
        for q in densify(qpath, ctx.settings.collision_step):
            d.qpos[robot.arm_qpos] = q
            mujoco.mj_kinematics(m, d)
            tcp_pos, tcp_rot = d.site_xpos[robot.tcp_site], d.site_xmat[robot.tcp_site].reshape(3, 3)
            d.qpos[adr:adr + 3] = tcp_pos + tcp_rot @ tcp_p_block
            d.qpos[adr + 3:adr + 7] = geo.quat(tcp_rot @ tcp_R_block)
            mujoco.mj_kinematics(m, d)
            mujoco.mj_collision(m, d)
            if not d.ncon:
                continue
            con = d.contact
            b1, b2 = m.geom_bodyid[con.geom1], m.geom_bodyid[con.geom2]
            other = np.where(b1 == body, b2, b1)
            hit = ((b1 == body) | (b2 == body)) & (con.dist < -HELD_PENETRATION) & ~is_robot[other]
            if hit.any():
                return ", ".join(sorted({m.body(int(b)).name for b in other[hit]}))
        return ""

    def hold(self, seconds: float, phase: str, gripper: float) -> None:
        """Keep the arm still for `seconds` [s] while commanding `gripper` closedness."""
        ticks = max(1, round(seconds / self.dt))
        self._append(np.repeat(self.q[None], ticks, axis=0), gripper, phase)
        self.grip = gripper
        if gripper == 0.0:
            self.held = None

    def mark(self) -> tuple:
        """A point to `rollback` to when a candidate (grasp, placement) turns out infeasible."""
        return len(self._q), self.q.copy(), self.grip, self.held

    def rollback(self, mark: tuple) -> None:
        n, self.q, self.grip, self.held = mark
        del self._q[n:], self._grip[n:], self._phase[n:]

    def ticks(self) -> int:
        return sum(len(q) for q in self._q)

    def snapshot(self) -> tuple:
        """Everything appended so far, to `restore` after trying other candidates."""
        return list(self._q), list(self._grip), list(self._phase), self.q.copy(), self.grip, self.held

    def restore(self, snap: tuple) -> None:
        qs, grips, phases, self.q, self.grip, self.held = snap
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

    def _contact_names(self, excluded: tuple[int, ...]) -> str:
        """Names of the scene bodies the robot touches in scratch's current configuration."""
        m, d, robot = self.ctx.model, self.ctx.scratch, self.ctx.robot
        names = set()
        for c in d.contact[: d.ncon]:
            b1, b2 = m.geom_bodyid[c.geom1], m.geom_bodyid[c.geom2]
            if (b1 in robot.body_ids) != (b2 in robot.body_ids) and c.dist < 0:
                other = b2 if b1 in robot.body_ids else b1
                if other not in excluded:
                    names.add(m.body(other).name)
        return ", ".join(sorted(names)) or "the scene"


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
