"""Replay checks: does a recorded dataset reproduce its own states?

    report = replay_dataset("out/run/success")             # open loop through the control law
    report = replay_dataset(root, kinematic=True)          # teleport along sim.state
    report.exact, report.episodes[0].max_robot, report.to_json()

Open loop: each episode's model is rebuilt (`demoforge.replay.episode_scene`: scene draw and
physics randomization as recorded), its first `sim.state` row restored, and its
`raw_command` rows applied tick by tick through the recorded control law
(meta/demoforge/controller.json) at the recorded rate, with the recorded object assist;
before every tick the simulated state is compared with the recorded row. Divergence is
the largest absolute difference of robot joint positions [rad] and of object
coordinates (free-joint qpos: positions [m] and quaternions [-]) over the episode, and
`exact` says whether every full state matched bit for bit.

Kinematic: every row is restored in turn (what a camera check does); the report then
compares the recorded `observation.state` with the state each restored row implies.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import mujoco
import numpy as np

from demoforge.dataset import open_dataset
from demoforge.dataset.keys import row_extra
from demoforge.dataset.layout import DEMOFORGE_META_DIR
from demoforge.policy.protocol import PolicyError
from demoforge.policy.settings import Assist, apply_assist
from demoforge.raw import EpisodeRecord, own_states, schema
from demoforge.replay import episode_scene
from demoforge.sim import ControlLaw, control_step, gripper_closedness, restore, snapshot


@dataclass(frozen=True)
class EpisodeDivergence:
    """One episode's replay against its recording."""

    episode: int  # episode index in the dataset
    ticks: int  # rows compared
    max_robot: float  # largest |robot joint position difference| [rad] (kinematic: observation.state)
    max_object: float  # largest |object free-joint qpos difference| [m or -]
    first_diverging_tick: int | None  # first row whose full state differed (None: all equal)
    exact: bool  # every full state bit-identical


@dataclass(frozen=True)
class ReplayReport:
    root: str  # the dataset
    mode: str  # "open_loop" or "kinematic"
    episodes: tuple[EpisodeDivergence, ...]

    @property
    def exact(self) -> bool:
        return all(e.exact for e in self.episodes)

    def diverging(self, tol_robot: float = 1e-6, tol_object: float = 1e-6) -> list[int]:
        return [e.episode for e in self.episodes if e.max_robot > tol_robot or e.max_object > tol_object]

    def to_json(self) -> dict:
        return {"root": self.root, "mode": self.mode, "exact": self.exact,
                "episodes": [asdict(e) for e in self.episodes]}


def _law(root: Path) -> ControlLaw:
    file = root / DEMOFORGE_META_DIR / schema.CONTROLLER_META
    if not file.is_file():
        raise PolicyError(f"{file}: missing; open-loop replay needs the recorded control law")
    return ControlLaw.from_dict(json.loads(file.read_text(encoding="utf-8")), where=str(file))


def _assist(row: dict) -> Assist | None:
    raw = row_extra(row, "assist")
    return None if raw is None else Assist(**raw)


def replay_episode(root: Path, k: int, *, law: ControlLaw | None, fps: int, kinematic: bool) -> EpisodeDivergence:
    reader = open_dataset(root)
    cols = reader.read_episode(k, [schema.SIM_STATE, schema.RAW_COMMAND, schema.STATE])
    states = own_states(cols[schema.SIM_STATE], EpisodeRecord.from_row(reader.episode(k)), where=f"{root} episode {k}")
    scene = episode_scene(root, k)
    m, d, robot = scene.model, scene.data, scene.robot
    if states.shape[1] != len(snapshot(m, d)):
        raise PolicyError(f"{root} episode {k}: sim.state has {states.shape[1]} values, the rebuilt model "
                          f"{len(snapshot(m, d))}; the model differs from the recorded one")
    joints = np.flatnonzero(m.jnt_type == mujoco.mjtJoint.mjJNT_FREE)
    obj = np.concatenate([np.arange(a, a + 7) for a in m.jnt_qposadr[joints]]) if len(joints) else np.zeros(0, int)
    arm = np.asarray(robot.arm_qpos)
    ref = mujoco.MjData(m)
    max_r = max_o = 0.0
    first = None
    if kinematic:
        for t, row in enumerate(states):
            restore(m, d, row)
            obs = np.empty(len(arm) + 1, np.float32)
            obs[:-1], obs[-1] = d.qpos[arm], gripper_closedness(robot, d.qpos)
            diff = float(np.abs(obs.astype(np.float64) - cols[schema.STATE][t]).max())
            max_r = max(max_r, diff)
            if diff > 0 and first is None:
                first = t
        return EpisodeDivergence(k, len(states), max_r, 0.0, first, first is None)
    substeps = round(1.0 / (fps * m.opt.timestep))
    assist = _assist(reader.episode(k))
    restore(m, d, states[0])
    for t, row in enumerate(states):
        now = snapshot(m, d)
        if first is None and not np.array_equal(now, row):
            first = t
        restore(m, ref, row)
        max_r = max(max_r, float(np.abs(d.qpos[arm] - ref.qpos[arm]).max()))
        if len(obj):
            max_o = max(max_o, float(np.abs(d.qpos[obj] - ref.qpos[obj]).max()))
        cmd = cols[schema.RAW_COMMAND][t].astype(np.float64)
        apply_assist(scene, assist, t)
        control_step(scene, law, cmd[:-1], float(cmd[-1]), substeps)
    return EpisodeDivergence(k, len(states), max_r, max_o, first, first is None)


def replay_dataset(root: str | Path, episodes: list[int] | None = None, *, kinematic: bool = False) -> ReplayReport:
    """Replay `episodes` (default all) of `root`; see the module docstring."""
    root = Path(root)
    reader = open_dataset(root)
    indices = reader.episode_indices if episodes is None else list(episodes)
    unknown = sorted(set(indices) - set(reader.episode_indices))
    if unknown:
        raise PolicyError(f"{root}: no episodes {unknown}; it has 0..{reader.num_episodes - 1}")
    law = None if kinematic else _law(root)
    fps = reader.info.fps
    out = tuple(replay_episode(root, k, law=law, fps=fps, kinematic=kinematic) for k in indices)
    return ReplayReport(str(root), "kinematic" if kinematic else "open_loop", out)
