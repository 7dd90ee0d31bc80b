"""Episodes of a robomimic-layout HDF5 file (robomimic, MimicGen, robosuite; `demoforge.dataset.hdf5`).

How the file's observations map onto the canonical Episode (every demo must hold the same keys):

- arm joint positions [rad] (required): `obs/robot0_joint_pos` (robosuite) or `obs/joint_pos`;
- gripper (required): `obs/robot0_gripper_qpos` (robosuite's finger joints: two mirrored fingers
  give the finger opening q0 - q1 [m], one finger its position) or `obs/gripper` (a (N, 1)
  closedness, as `rollout --output-format hdf5` writes it);
- cameras: `obs/<camera>_image`, (N, H, W, 3) uint8 -> `observation.images.<camera>`, carried as
  stored (robosuite's default OpenGL image convention stores them upside down; nothing is flipped);
- `actions` is kept verbatim as the recorded action (its meaning, e.g. an OSC delta pose, is the
  environment's: bake keeps it with `--control-space as_recorded`);
- the other low-dimensional `obs/<key>` become columns `observation.<key>`; `states` (flattened
  MuJoCo states) the column `states`; `rewards` and `dones` lerobot's `next.reward` and `next.done`.
  Bake carries them with `--keep`. What fits none of these (depth maps, higher-rank arrays) is
  named in the bake's notes, not read.
- the rate is env_args' `env_kwargs.control_freq` [Hz]; the task each demo's `task` attribute
  (demoforge's roll-outs write it) or else env_args' `env_name`; the outcome a demo's `outcome`
  attribute when present (robomimic's demos carry none: they are kept as successes would be).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from demoforge.convert.episode import BakeError, Episode, content_sha256
from demoforge.dataset.hdf5 import (
    ACTIONS, DATA, DONES, IMAGE_SUFFIX, OBS, REWARDS, STATES, check_hdf5, control_freq, demo_names, env_args,
    require_h5py,
)
from demoforge.dataset.keys import OBSERVATION_PREFIX, image_key
from demoforge.errors import listing

ARM_KEYS = ("robot0_joint_pos", "joint_pos")  # arm joint positions [rad], in order of preference
ROBOSUITE_GRIPPER = "robot0_gripper_qpos"  # robosuite's finger joint positions [m]
CLOSEDNESS = "gripper"  # demoforge's (N, 1) closedness [0 open .. 1 closed]
REWARD, DONE = "next.reward", "next.done"  # lerobot's names for them
STATES_COLUMN = "states"

OPENING = {"quantity": "finger opening [m]", "open": None, "closed": 0.0,
           "from": f"obs/{ROBOSUITE_GRIPPER}: q0 - q1 of robosuite's two mirrored finger joints"}
ONE_FINGER = {"quantity": "finger joint position", "open": None, "closed": None,
              "from": f"obs/{ROBOSUITE_GRIPPER}, its one component as recorded"}
CLOSED = {"quantity": "closedness", "open": 0.0, "closed": 1.0, "from": f"obs/{CLOSEDNESS} as recorded"}


def read_robomimic(path: str | Path) -> Iterator[Episode]:
    """The file's demos in robomimic's order (demo_<i> by i), one at a time."""
    path = Path(path)
    h5py = require_h5py(path)
    problems = check_hdf5(path)
    if problems:
        raise BakeError(f"{path}: not a robomimic-layout file demoforge can read ({len(problems)} problem"
                        f"{'s' if len(problems) != 1 else ''}; `demoforge dataset check {path}` lists them):"
                        + listing(f"{p.file}: {p.message}" for p in problems))
    with h5py.File(path, "r") as f:
        data = f[DATA]
        args = env_args(data)
        fps = control_freq(args)
        for index, name in enumerate(demo_names(data)):
            yield _episode(path, index, name, data[name], fps, args)


def _episode(path: Path, index: int, name: str, demo, fps: int, args: dict[str, Any]) -> Episode:
    obs = demo[OBS]
    where = f"{DATA}/{name}/{OBS}"
    have = sorted(obs.keys())
    arm = next((k for k in ARM_KEYS if k in obs), None)
    grip = next((k for k in (ROBOSUITE_GRIPPER, CLOSEDNESS) if k in obs), None)
    if arm is None or grip is None:
        missing = [f"{ARM_KEYS[0]!r} or {ARM_KEYS[1]!r} (arm joint positions [rad])"] if arm is None else []
        missing += [f"{ROBOSUITE_GRIPPER!r} or {CLOSEDNESS!r} (the gripper)"] if grip is None else []
        raise BakeError(f"{path}: {where} lacks {' and '.join(missing)}; it holds {have}. Extract robosuite's "
                        "proprioception with robomimic's dataset_states_to_obs.py, or write obs/joint_pos (N, n) "
                        "and obs/gripper (N, 1)")
    q = np.asarray(obs[arm], dtype=np.float64)
    if q.ndim != 2 or q.shape[1] < 1:
        raise BakeError(f"{path}: {where}/{arm} has shape {q.shape}; it must be (N, n_joints)")
    g = np.asarray(obs[grip], dtype=np.float64).reshape(len(q), -1)
    if grip == CLOSEDNESS and g.shape[1] == 1:
        gripper, meaning = g[:, 0], CLOSED
    elif grip == ROBOSUITE_GRIPPER and g.shape[1] == 2:
        gripper, meaning = g[:, 0] - g[:, 1], OPENING
    elif grip == ROBOSUITE_GRIPPER and g.shape[1] == 1:
        gripper, meaning = g[:, 0], ONE_FINGER
    else:
        raise BakeError(f"{path}: {where}/{grip} has {g.shape[1]} components; demoforge reads a two-finger "
                        f"gripper (2 finger joints) or one closedness value; write obs/{CLOSEDNESS} (N, 1) "
                        "with the gripper's closedness for other grippers")
    actions = np.asarray(demo[ACTIONS], dtype=np.float64)
    frames, columns, skipped = {}, {}, []
    for key in have:
        ds = obs[key]
        if key.endswith(IMAGE_SUFFIX) and ds.ndim == 4 and ds.shape[-1] == 3 and ds.dtype == np.uint8:
            frames[image_key(key[: -len(IMAGE_SUFFIX)])] = np.asarray(ds)
        elif key != arm and ds.ndim <= 2 and ds.dtype.kind in "fiub":
            columns[OBSERVATION_PREFIX + key] = np.asarray(ds, dtype=np.float32).reshape(len(q), -1)
        elif key != arm:
            skipped.append(f"{OBS}/{key}")
    if STATES in demo:
        columns[STATES_COLUMN] = np.asarray(demo[STATES], dtype=np.float64).reshape(len(q), -1)
    if REWARDS in demo:
        columns[REWARD] = np.asarray(demo[REWARDS], dtype=np.float32).reshape(len(q), 1)
    if DONES in demo:
        columns[DONE] = np.asarray(demo[DONES]).astype(bool).reshape(len(q), 1)
    task = _text(demo.attrs.get("task")) or _text(args.get("env_name"))
    if not task:
        raise BakeError(f"{path}: {DATA}: env_args has no env_name and {DATA}/{name} no task attribute; bake "
                        "needs a task string (or pass --task)")
    outcome = _text(demo.attrs.get("outcome")) or None
    extra: dict[str, Any] = {"hdf5_demo": name}
    if skipped:
        extra["not_read"] = skipped
    hashed = {ACTIONS: actions, arm: q, grip: g, **columns, **frames}
    return Episode(
        source=path, index=index, reader="robomimic_hdf5", fps=fps, task=task, time=np.arange(len(q)) / fps,
        q=q, gripper=gripper, joint_names=tuple(f"joint_{k}" for k in range(q.shape[1])), target=None,
        target_gripper=None, raw_command=None, sim_state=None, law=None, outcome=outcome, extra=extra,
        sha256=content_sha256(hashed, {}), action=actions,
        action_names=tuple(f"action_{k}" for k in range(actions.shape[1])), frames=frames, columns=columns,
        gripper_meaning=meaning,
    )


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)
