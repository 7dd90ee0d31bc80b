"""D014 path efficiency: how far the arm's joints travel per PDDL operator against what the
end effector's motion needs.

A raw dataset says per frame which operator runs (`plan.operator`) and which skill phase
(`plan.phase`). For each run of one operator the scan keeps the joint travel, the sum over
frames and arm joints of |dq| [rad], and the arm configuration where the run starts, where
each phase starts and where it ends. Forward kinematics of the robot card (a robot-only
model, so no scene is rebuilt) gives the tool centre point (TCP) at those waypoints; an
efficient arm moving the TCP along the polyline through them needs about

    need = path_rad_per_m * (TCP distance [m]) + (TCP rotation [rad])

of joint travel (phase by phase straight moves: an arm of this size turns its joints by a
few radians per metre of TCP motion, and a wrist turn costs what it turns). A run whose
travel exceeds `path_factor` x need + `path_slack` spent the difference on joint-space
detours: an IK solution on another arm branch between two waypoints, or a straight
joint-space segment swinging the arm around on its way.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from demoforge.dataset.keys import STATE
from demoforge.doctor.findings import Evidence, Finding
from demoforge.raw.schema import OPERATOR, read_vocab

if TYPE_CHECKING:  # the scan imports this module, and the context imports the scan
    from demoforge.doctor.context import Context


@dataclass(frozen=True)
class OperatorPath:
    """One run of a PDDL operator within an episode (consecutive frames with one plan.operator)."""

    operator: int  # plan.operator index into meta/demoforge/vocab.json "operators"
    start: int  # first frame
    end: int  # one past the last frame
    travel: float  # sum over the run's frame steps and arm joints of |dq| [rad]
    waypoints: np.ndarray  # (k, n_arm) arm q at the run's start, at each plan.phase change, at its last frame [rad]


def operator_paths(q: np.ndarray, operator: np.ndarray, phase: np.ndarray | None = None) -> tuple[OperatorPath, ...]:
    """The operator runs of one episode from its (T, n_arm) arm q [rad] and (T,) plan.operator
    (and plan.phase) columns; frames with no operator (-1) belong to no run."""
    q = np.asarray(q, dtype=np.float64)
    op = np.asarray(operator).reshape(-1)
    cuts = np.flatnonzero(np.diff(op)) + 1
    out = []
    for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(op)]):
        if op[a] < 0:
            continue
        seg = q[a:b]
        travel = float(np.abs(np.diff(seg, axis=0)).sum()) if b - a > 1 else 0.0
        marks = [0]
        if phase is not None:
            ph = np.asarray(phase).reshape(-1)[a:b]
            marks += (np.flatnonzero(np.diff(ph)) + 1).tolist()
        marks.append(b - a - 1)
        out.append(OperatorPath(int(op[a]), int(a), int(b), travel, seg[sorted(set(marks))]))
    return tuple(out)


class TcpKinematics:
    """Forward kinematics of a robot card's TCP on its robot-only model."""

    def __init__(self, card):
        import mujoco

        # lazy: the doctor reads a real-robot log without MuJoCo (only D014 builds the arm)
        from demoforge.sim.robot_model import bind_robot, robot_spec

        self._mj = mujoco
        self.model = robot_spec(card).compile()
        self.data = mujoco.MjData(self.model)
        self.index = bind_robot(self.model, card)

    def poses(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(k, 3) TCP positions [m] and (k, 3, 3) rotations for (k, n_arm) arm configurations [rad]."""
        pos, rot = np.empty((len(q), 3)), np.empty((len(q), 3, 3))
        for i, row in enumerate(q):
            self.data.qpos[self.index.arm_qpos] = row
            self._mj.mj_kinematics(self.model, self.data)
            pos[i] = self.data.site_xpos[self.index.tcp_site]
            rot[i] = self.data.site_xmat[self.index.tcp_site].reshape(3, 3)
        return pos, rot


def tcp_motion(pos: np.ndarray, rot: np.ndarray) -> tuple[float, float]:
    """Length [m] and total rotation [rad] of the TCP polyline through the waypoints."""
    dist = float(np.linalg.norm(np.diff(pos, axis=0), axis=1).sum())
    rel = np.einsum("kji,kjl->kil", rot[:-1], rot[1:])  # R_k^T R_{k+1}
    cos = np.clip((np.trace(rel, axis1=1, axis2=2) - 1.0) / 2.0, -1.0, 1.0)
    return dist, float(np.arccos(cos).sum())


def check_path_efficiency(ctx: Context) -> list[Finding]:
    """D014: per PDDL operator, the runs whose joint travel is far above what the TCP's motion needs."""
    if ctx.scan is None or ctx.info is None or OPERATOR not in ctx.info.features:
        return []
    limits = ctx.scan.limits
    if limits is None or limits.card is None:
        why = ctx.limits_note or f"the joint limits came from {limits.source}, not a robot card"
        return [Finding("D014", "info", f"path efficiency not checked: the TCP needs a robot card ({why})",
                        Evidence(feature=STATE), "pass --robot CARD (e.g. --robot panda or a card YAML)")]
    runs = [(s.episode, p) for s in ctx.scan.episodes for p in s.operator_paths]
    if not runs:
        return []
    cfg = ctx.config
    vocab = read_vocab(ctx.root) or {}
    names = vocab.get("operators", [])
    fk = TcpKinematics(limits.card)
    by_op: dict[int, list[dict]] = defaultdict(list)
    for episode, p in runs:
        dist, turn = tcp_motion(*fk.poses(p.waypoints))
        need = cfg.path_rad_per_m * dist + turn
        by_op[p.operator].append({"episode": episode, "start": p.start, "end": p.end, "travel_rad": p.travel,
                                  "tcp_path_m": dist, "tcp_rotation_rad": turn, "need_rad": need,
                                  "flagged": p.travel > cfg.path_factor * need + cfg.path_slack})
    out = []
    for op in sorted(by_op):
        rows = by_op[op]
        bad = [r for r in rows if r["flagged"]]
        if not bad:
            continue
        name = names[op] if 0 <= op < len(names) else f"#{op}"
        worst = max(bad, key=lambda r: r["travel_rad"] - r["need_rad"])
        episodes = sorted({r["episode"] for r in bad})
        median = float(np.median([r["travel_rad"] for r in rows]))
        out.append(Finding(
            "D014", "warning",
            f"operator {name!r}: {len(bad)} of {len(rows)} runs move the arm's joints far more than the end "
            f"effector's motion needs (median travel {median:.1f} rad per run; worst: episode {worst['episode']}, "
            f"frames {worst['start']}-{worst['end'] - 1}, {worst['travel_rad']:.1f} rad where "
            f"{worst['tcp_path_m']:.2f} m and {worst['tcp_rotation_rad']:.2f} rad of TCP motion need about "
            f"{worst['need_rad']:.1f}); episodes {episodes[:50]}{' ...' if len(episodes) > 50 else ''}",
            Evidence(worst["episode"], worst["start"], STATE, {
                "operator": name, "runs": len(rows), "flagged": len(bad), "episodes": episodes,
                "median_travel_rad": median, "worst": {k: v for k, v in worst.items() if k != "flagged"},
                "rule": f"travel > {cfg.path_factor} x ({cfg.path_rad_per_m} rad/m x TCP path + TCP rotation) "
                        f"+ {cfg.path_slack} rad"}),
            "joint-space detours: the expert's IK switched arm branch between waypoints, or a straight "
            "joint-space segment swung the arm around; see one with `demoforge plot DATASET --episode E`. "
            "Regenerate with an expert whose IK is seeded from the current configuration and kept on one arm "
            "branch, with Cartesian straight approach and retreat, or leave these episodes out of training: "
            "long, wandering motion is hard for a policy to imitate"))
    return out
