"""Plan coverage episodes: joint-space goals in the emptiest occupancy bins, reached by IK.

Each episode drives the arm from its start configuration (home, or the first recorded state
of the input episode whose scene it reuses) to one goal configuration. The goal is drawn with the
target joint inside the emptiest bin (the other joints in their own emptiest bins for the
first half of the draws, anywhere within their limits after that), turned into a TCP target
by forward kinematics, and solved back by IK; the draw is kept when the IK solution puts the
target joint in the window and the straight joint path from the start is collision-free
(against everything in that scene). After
`attempts` misses the window widens by one bin on each side, and after `max_widen` widenings
the goal is sampled freely. The move lasts long enough that no joint exceeds `max_speed`
(so the doctor's D008 stays quiet on the new episodes). The predicted occupancy of each
planned path is added to the histogram at once, so the next episode chases a different hole.
"""

from __future__ import annotations

from dataclasses import dataclass

import copy

import mujoco
import numpy as np

from demoforge.doctor.scan import occupancy_counts
from demoforge.doctor.registry import CoverageError
from demoforge.sim import IKOptions, first_collision, solve_ik

MIN_TCP_CLEARANCE = 0.03  # TCP height above the table top a goal needs [m]
FREE_TRIES = 200  # free-sampling draws before giving up on an episode


@dataclass(frozen=True)
class PlannedEpisode:
    """One coverage episode's goal and why it was chosen."""

    index: int  # among the new episodes
    source_episode: int | None  # input episode whose scene and first state it starts from (raw inputs)
    joint: str  # joint whose hole it chases
    bin: int  # that joint's target bin
    window: tuple[int, int]  # bins (first, last) the target joint's goal had to land in
    mode: str  # "bin", "widened" or "free"
    q_start: tuple[float, ...]  # arm configuration at the first tick [rad]
    q_goal: tuple[float, ...]  # arm goal configuration [rad]
    tcp_goal: tuple[float, float, float]  # TCP position at the goal, world frame [m]
    move_ticks: int  # control ticks from start to goal
    hold_ticks: int  # control ticks holding the goal

    @property
    def path(self) -> np.ndarray:
        """(ticks, n_arm) commanded joint targets [rad]."""
        return joint_path(np.asarray(self.q_start), np.asarray(self.q_goal), self.move_ticks, self.hold_ticks)

    def to_json(self) -> dict:
        return {"index": self.index, "source_episode": self.source_episode, "joint": self.joint, "bin": self.bin,
                "window": list(self.window), "mode": self.mode, "q_start": list(self.q_start),
                "q_goal": list(self.q_goal), "tcp_goal": list(self.tcp_goal), "move_ticks": self.move_ticks,
                "hold_ticks": self.hold_ticks}


def joint_path(q_start: np.ndarray, q_goal: np.ndarray, move_ticks: int, hold_ticks: int) -> np.ndarray:
    """(move_ticks + hold_ticks, n) commanded joint targets: a smooth (cosine) line, then a hold."""
    s = 0.5 - 0.5 * np.cos(np.pi * np.arange(1, move_ticks + 1) / move_ticks)
    move = q_start + (q_goal - q_start) * s[:, None]
    return np.concatenate([move, np.repeat(q_goal[None], hold_ticks, axis=0)])


def _pick(counts: np.ndarray, rng: np.random.Generator) -> int:
    """Index of a smallest count, ties broken by `rng`."""
    return int(rng.choice(np.flatnonzero(counts == counts.min())))


def _sample_in(edges: np.ndarray, first: int, last: int, rng: np.random.Generator) -> float:
    return float(rng.uniform(edges[first], edges[last + 1]))


class Planner:
    """Goal planning against one running histogram; see the module docstring."""

    def __init__(self, limits, counts: np.ndarray, *, bins: int, min_frames: int, attempts: int, max_widen: int,
                 fps: int, move_s: float, hold_s: float, max_speed: float):
        self.limits, self.bins = limits, bins
        self.counts = counts.astype(np.int64).copy()
        self.min_frames, self.attempts, self.max_widen = min_frames, attempts, max_widen
        self.fps, self.move_s, self.hold_s, self.max_speed = fps, move_s, hold_s, max_speed
        self.lim = limits.array
        self.edges = [np.linspace(lo, hi, bins + 1) for lo, hi in self.lim]

    def _fk(self, scene, data, q: np.ndarray) -> np.ndarray:
        data.qpos[scene.robot.arm_qpos] = q
        mujoco.mj_kinematics(scene.model, data)
        return data.site_xpos[scene.robot.tcp_site].copy()

    def _draw(self, j: int, window: tuple[int, int], greedy: bool, rng: np.random.Generator) -> np.ndarray:
        q = np.empty(len(self.lim))
        for k in range(len(self.lim)):
            if k == j:
                q[k] = _sample_in(self.edges[k], *window, rng)
            elif greedy:
                b = _pick(self.counts[k], rng)
                q[k] = _sample_in(self.edges[k], b, b, rng)
            else:
                q[k] = rng.uniform(*self.lim[k])
        return q

    def _accept(self, scene, q_start: np.ndarray, q_seed: np.ndarray, j: int | None, window: tuple[int, int] | None,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray] | None:
        robot = scene.robot
        data = copy.copy(scene.data)  # props where the episode starts; scratch for IK and collisions
        pos = self._fk(scene, data, q_seed)
        if pos[2] < scene.spec.table.height + MIN_TCP_CLEARANCE:
            return None
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, data.site_xmat[robot.tcp_site])
        # The IK solution, not the drawn configuration, is what the arm will reach.
        init = np.clip(q_seed + rng.normal(0.0, 0.05, size=q_seed.shape), self.lim[:, 0], self.lim[:, 1])
        ik = solve_ik(scene.model, data, robot, pos, quat, rng=rng, q_init=init, options=IKOptions(restarts=2))
        if not ik.success:
            return None
        q = ik.q
        if j is not None and not self.edges[j][window[0]] <= q[j] <= self.edges[j][window[1] + 1]:
            return None
        if first_collision(scene.model, data, robot, np.stack([q_start, q])) is not None:
            return None
        return q, self._fk(scene, data, q)

    def _target(self, rng: np.random.Generator) -> tuple[int, int]:
        occupancy = (self.counts >= self.min_frames).mean(axis=1)
        worst = np.flatnonzero(occupancy == occupancy.min())
        j = int(worst[np.argmin(self.counts.min(axis=1)[worst])])
        return j, _pick(self.counts[j], rng)

    def plan(self, index: int, rng: np.random.Generator, scene, q_start: np.ndarray,
             source_episode: int | None = None) -> PlannedEpisode:
        """The next episode's goal, starting at `q_start` in `scene`; updates the predicted occupancy."""
        q_start = np.asarray(q_start, dtype=np.float64)
        j, b = self._target(rng)
        found, mode, window = None, "bin", (b, b)
        for widen in range(self.max_widen + 1):
            window = (max(0, b - widen), min(self.bins - 1, b + widen))
            mode = "bin" if widen == 0 else "widened"
            for a in range(self.attempts):
                found = self._accept(scene, q_start, self._draw(j, window, a < self.attempts // 2, rng), j, window, rng)
                if found is not None:
                    break
            if found is not None:
                break
        if found is None:
            mode, window = "free", (0, self.bins - 1)
            for _ in range(FREE_TRIES):
                found = self._accept(scene, q_start, rng.uniform(self.lim[:, 0], self.lim[:, 1]), None, None, rng)
                if found is not None:
                    break
        if found is None:
            raise CoverageError(f"coverage episode {index}: no collision-free reachable goal in {FREE_TRIES} free "
                                "draws; is the start pose in collision with the scene?")
        q, tcp = found
        # a cosine profile peaks at pi/2 times the mean speed
        move_s = max(self.move_s, float(np.abs(q - q_start).max()) * np.pi / 2 / self.max_speed)
        planned = PlannedEpisode(index, source_episode, self.limits.names[j], b, window, mode,
                                 tuple(q_start.tolist()), tuple(q.tolist()), tuple(float(x) for x in tcp),
                                 int(np.ceil(move_s * self.fps)), round(self.hold_s * self.fps))
        path = planned.path
        padded = np.zeros((len(path), max(self.limits.dims) + 1))
        padded[:, list(self.limits.dims)] = path
        self.counts += occupancy_counts(padded, self.limits, self.bins)[0]
        return planned
