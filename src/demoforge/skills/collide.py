"""Collision checks of a skill's plan: the robot, and a block carried rigidly in its hand, against
the scene along joint paths (a `PlanBuilder` concern; see `skills.builder`).

`CollisionChecks` is a mixin of `PlanBuilder`: it reads the builder's `ctx`, current targets `q`,
`held` block, `held_drop`, `padding` and `check_grip`, and overwrites `ctx.scratch` (put back by
`_reset_scratch`).
"""

from __future__ import annotations

import mujoco
import numpy as np

from demoforge.sim.ik import densify
from demoforge.sim.linkage import linkage_positions
from demoforge.skills import geometry as geo

# A held block resting on its support overlaps it by ~0.02 mm; only deeper overlaps are hits.
HELD_PENETRATION = 0.001  # [m]


class CollisionChecks:
    """What the robot or the held block touches along a path (mixed into `PlanBuilder`)."""

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
