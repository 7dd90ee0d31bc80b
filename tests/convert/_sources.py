"""Synthetic sources for bake tests: raw demoforge datasets following the raw.schema
contract (known linear motion, frames whose grey level encodes the tick) and Episodes
built directly for the pure functions."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from demoforge.convert import Episode
from demoforge.dataset import DatasetWriter, Feature, VideoSettings
from demoforge.raw import schema
from demoforge.sim import ControlLaw

N_ARM = 3
JOINTS = [f"joint{k}" for k in range(1, N_ARM + 1)]
FPS = 60
OFFSET = 1 / 64  # commanded target - achieved [rad]
SQUEEZE = 1.25  # commanded gripper closedness
N_STATE = 1 + N_ARM + 2  # time, arm q, one object's (x, y)
CAMS = ("observation.images.front", "observation.images.wrist")
HW = (32, 48)


def law(mode: str = "joint_position", kp: float = 100.0) -> ControlLaw:
    return ControlLaw(mode=mode, kp=(kp,) * N_ARM, kd=(10.0,) * N_ARM)


def motion(length: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Known motion: q[t, j] = (j + 1) * t / 256 + seed / 8 (exact in float32)."""
    t = np.arange(length, dtype=np.float64)[:, None]
    q = (np.arange(1, N_ARM + 1) * t) / 256 + seed / 8
    gripper = np.arange(length) / 64
    return {"q": q, "gripper": gripper, "target": q + OFFSET, "target_gripper": np.full(length, SQUEEZE)}


def frame_level(tick: int) -> int:
    return (16 + 9 * tick) % 240


def raw_columns(length: int, seed: int = 0, cams=CAMS) -> dict[str, np.ndarray]:
    m = motion(length, seed)
    state = np.column_stack([m["q"], m["gripper"]]).astype(np.float32)
    action = np.column_stack([m["target"], m["target_gripper"]]).astype(np.float32)
    sim = np.column_stack([np.arange(length) / FPS, m["q"], np.full((length, 2), 0.3)])
    cols = {
        schema.STATE: state, schema.ACTION: action, schema.RAW_COMMAND: action.copy(), schema.SIM_STATE: sim,
        schema.SYMBOLIC_STATE: np.zeros((length, 1), bool), schema.OPERATOR: np.zeros((length, 1), np.int64),
        schema.PHASE: np.full((length, 1), -1, np.int64),
    }
    for key in cams:
        frames = np.empty((length, *HW, 3), np.uint8)
        for k in range(length):
            frames[k] = frame_level(k)
        cols[key] = frames
    return cols


def write_raw(root: Path, lengths=(12, 9), *, outcomes=None, control=None, cams=CAMS,
              video: VideoSettings | None = None, fps: int = FPS) -> Path:
    """A raw dataset as execution writes it, plus rendered cameras; returns root."""
    features = schema.raw_features(n_arm=N_ARM, n_command=N_ARM, n_state=N_STATE, atoms=["(on a b)"],
                                   joint_names=JOINTS)
    for key in cams:
        features[key] = Feature("video", (*HW, 3))
    outcomes = outcomes or ["success"] * len(lengths)
    with DatasetWriter.create(root, fps=fps, features=features, robot_type="test_arm", video=video) as w:
        for e, (n, outcome) in enumerate(zip(lengths, outcomes)):
            w.add_episode(raw_columns(n, seed=e, cams=cams), task=f"stack {e % 2}",
                          extra={"outcome": outcome, "seed": e})
        w.write_meta_file(schema.CONTROLLER_META, (control or law()).to_json())
    return root


def episode(length: int = 12, *, fps: int = FPS, mode: str = "joint_position", **override) -> Episode:
    """An Episode built directly, with the known motion."""
    m = motion(length)
    fields = dict(
        source=Path("synthetic"), index=0, reader="demoforge_raw", fps=fps, task="t",
        time=np.arange(length) / fps, q=m["q"], gripper=m["gripper"], joint_names=tuple(JOINTS),
        target=m["target"], target_gripper=m["target_gripper"],
        raw_command=np.column_stack([m["target"], m["target_gripper"]]),
        sim_state=np.column_stack([np.arange(length) / fps, m["q"], np.full((length, 2), 0.3)]),
        law={"mode": mode}, outcome="success", objects=np.full((length, 2), 0.3),
    )
    fields.update(override)
    return Episode(**fields)
