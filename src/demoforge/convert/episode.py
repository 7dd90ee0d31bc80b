"""The canonical Episode: one source episode as arrays, whatever wrote the dataset.

Every convention is a pure function of an Episode, so a new source (a real-robot log)
costs one reader. Two readers exist, picked by what the dataset root holds:

- `demoforge_raw`: a raw dataset from `demoforge.execute` (the contract in
  `demoforge.raw.schema`); recognised by `meta/demoforge/controller.json`. Its
  `observation.state` is [arm q, gripper closedness] (closedness already computed from
  each finger's travel in the robot card at record time), `action` the commanded joint
  targets and gripper closedness in force during the tick, `raw_command` the controller
  input verbatim, `sim.state` the physics snapshot.
- `lerobot`: any other LeRobot v3 dataset. Only `observation.state` is given a meaning:
  its last component is taken as the gripper and the others as arm joint positions.
  Its `action` column has no known meaning (targets? deltas? velocities?), so the
  conventions that need commanded targets or the raw command are refused for it; it is
  kept verbatim as `Episode.action` for the `as_recorded` convention.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import av
import numpy as np

from demoforge.convert.seams import EpisodeModels
from demoforge.dataset.keys import HISTOGRAM_PREFIX, episode_extras
from demoforge.dataset.layout import Feature
from demoforge.dataset.reader import DatasetReader
from demoforge.errors import DatasetError, DemoforgeError
from demoforge.raw import schema
from demoforge.raw.schema import CONTROLLER_PATH


class BakeError(DatasetError):
    """A source cannot be baked as asked (convention, rate, filter, law)."""


@dataclass(frozen=True)
class CameraRef:
    """Where one camera's frames of an episode live in the source (never decoded here)."""

    key: str  # feature name, e.g. "observation.images.front"
    path: Path  # mp4 holding the episode
    from_timestamp: float  # episode start within the mp4 [s]
    to_timestamp: float  # episode end (exclusive) within the mp4 [s]
    feature: Feature  # the source's video feature (shape and encoder info block)
    histogram: np.ndarray | None = None  # (3, 256) pixel counts of the episode, when the source stored them


@dataclass(frozen=True)
class Episode:
    """One source episode at its native control rate, T ticks."""

    source: Path  # dataset root
    index: int  # episode_index in the source
    reader: str  # name of the reader that built it (a key of READERS, or of convert.readers.registered())
    fps: int  # native control rate [Hz]
    task: str  # the episode's task string
    time: np.ndarray  # (T,) tick times [s]
    q: np.ndarray  # (T, n_arm) achieved arm joint positions [rad]
    gripper: np.ndarray  # (T,) achieved gripper closedness [0 open .. 1 closed]
    joint_names: tuple[str, ...]  # n_arm names
    target: np.ndarray | None  # (T, n_arm) commanded joint targets in force during the tick [rad]; None if unknown
    target_gripper: np.ndarray | None  # (T,) commanded closedness, unclamped (> 1 squeezes); None if unknown
    raw_command: np.ndarray | None  # (T, m) controller input verbatim (+ gripper); None if not recorded
    sim_state: np.ndarray | None  # (T, n_state) physics snapshots (zero padded past the episode's sim_state_width)
    law: dict[str, Any] | None  # the control law (ControlLaw fields); None if the source has none
    cameras: dict[str, CameraRef] = field(default_factory=dict)  # camera key -> reference
    outcome: str | None = None  # "success", "failure", or None when the source does not say
    extra: dict[str, Any] = field(default_factory=dict)  # the source's per-episode records (demoforge/<name>)
    sha256: str = ""  # content hash of the episode's data rows and video packets
    objects: np.ndarray | None = None  # (T, 7 k) free objects' qpos (position [m], wxyz quaternion); None unless read
    action: np.ndarray | None = None  # (T, k) the source's `action` column as recorded; None when it has none
    action_names: tuple[str, ...] = ()  # k names of the recorded action's components
    # camera key -> (T, H, W, 3) uint8 frames, for sources that store images rather than videos
    frames: dict[str, np.ndarray] = field(default_factory=dict)
    # other per-tick columns of a source read by `convert.readers` (name -> (T, ...)); bake's --keep carries them
    columns: dict[str, np.ndarray] = field(default_factory=dict)
    # what `gripper` holds when the reader knows ({quantity, open, closed, from}); None: see bake.gripper_convention
    gripper_meaning: dict[str, Any] | None = None

    @property
    def length(self) -> int:
        return int(self.time.shape[0])

    @property
    def n_arm(self) -> int:
        return int(self.q.shape[1])


def read_law(root: Path) -> dict[str, Any] | None:
    """The control law stamped in a demoforge dataset, or None for other datasets."""
    path = Path(root) / CONTROLLER_PATH
    if not path.is_file():
        return None
    try:
        law = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise BakeError(f"{path}: invalid JSON ({exc}); it must hold ControlLaw.to_json()") from exc
    if isinstance(law, str):  # to_json() output stored as a JSON string
        law = json.loads(law)
    if not isinstance(law, dict) or "mode" not in law:
        raise BakeError(f"{path}: expected a control law object with a 'mode' key, got {law!r}")
    return law


def source_kind(ds: DatasetReader) -> str:
    """Which reader fits this dataset (a key of READERS)."""
    return "demoforge_raw" if (ds.root / CONTROLLER_PATH).is_file() else "lerobot"


def read_episode(ds: DatasetReader, i: int, *, objects: bool = False,
                 models: EpisodeModels | None = None) -> Episode:
    """Episode `i` of an open source dataset as a canonical Episode.

    `objects`: also extract the free objects' poses from the physics state, through the
    episode's model rebuilt by `models` (only the idle filter needs them)."""
    return READERS[source_kind(ds)](ds, i, objects=objects, models=models)


def no_models(option: str, where: str) -> BakeError:
    """The error of a bake asked for `option`, which reads rebuilt models, without `models`."""
    return BakeError(f"{where}: {option} reads each raw episode's rebuilt MuJoCo model, and convert imports no "
                     "simulator: pass models=demoforge.replay.EPISODE_MODELS to bake (the CLI and `demoforge run` "
                     "do; convert.seams)")


def object_poses(ds: DatasetReader, i: int, sim: np.ndarray | None, models: EpisodeModels | None) -> np.ndarray:
    """(T, 7 k) the free objects' qpos in a raw episode's sim.state rows `sim`, their columns
    read off its model rebuilt by `models`."""
    if sim is None:
        raise BakeError(f"{ds.root}: no {schema.SIM_STATE!r} feature; object motion is unknown")
    if models is None:
        raise no_models("--filter-idle", f"{ds.root}: episode {i}")
    try:
        columns = models.object_qpos_columns(ds.root, i)
    except DemoforgeError as exc:
        raise BakeError(f"{ds.root}: episode {i}: cannot rebuild its model to tell whether objects move ({exc}); "
                        "bake without --filter-idle") from exc
    return sim[:, columns]


def _state_split(ds: DatasetReader, cols: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    if schema.STATE not in cols:
        raise BakeError(f"{ds.root}: no {schema.STATE!r} feature; bake needs [arm q, gripper] there")
    state = np.asarray(cols[schema.STATE], dtype=np.float64)
    if state.ndim != 2 or state.shape[1] < 2:
        raise BakeError(f"{ds.root}: {schema.STATE!r} has shape {state.shape[1:]}; bake needs [arm q..., gripper]")
    names = ds.info.features[schema.STATE].names
    n = state.shape[1] - 1
    arm = tuple(names[:n]) if isinstance(names, list) and len(names) == n + 1 else tuple(f"joint_{k}" for k in range(n))
    return state[:, :n], state[:, n], arm


def _recorded_action(ds: DatasetReader, cols: dict[str, np.ndarray]) -> tuple[np.ndarray | None, tuple[str, ...]]:
    """The source's `action` column verbatim (as float64) and its component names."""
    if schema.ACTION not in cols:
        return None, ()
    action = np.asarray(cols[schema.ACTION], dtype=np.float64)
    action = action.reshape(len(action), -1)
    names = ds.info.features[schema.ACTION].names
    if isinstance(names, dict):  # lerobot's older {"motors": [...]} form
        names = next(iter(names.values()), None)
    if isinstance(names, list) and len(names) == action.shape[1]:
        return action, tuple(str(n) for n in names)
    return action, tuple(f"action_{k}" for k in range(action.shape[1]))


def _common(ds: DatasetReader, i: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The episode's meta row and every data column (all of them feed the content hash)."""
    row = ds.episode(i)
    cols = ds.read_episode(i)
    tasks = row.get("tasks") or []
    if len(tasks) != 1:
        raise BakeError(f"{ds.root}: episode {i} has tasks {tasks}; bake needs exactly one task per episode")
    return row, cols


def _cameras(ds: DatasetReader, i: int, row: dict[str, Any]) -> dict[str, CameraRef]:
    out = {}
    for key in ds.info.video_keys:
        hist = row.get(HISTOGRAM_PREFIX + key)
        out[key] = CameraRef(
            key=key, path=ds.video_path(i, key), from_timestamp=float(row[f"videos/{key}/from_timestamp"]),
            to_timestamp=float(row[f"videos/{key}/to_timestamp"]), feature=ds.info.features[key],
            histogram=None if hist is None else np.asarray(hist, dtype=np.int64),
        )
    return out


def content_sha256(cols: dict[str, np.ndarray], cameras: dict[str, CameraRef]) -> str:
    """Hash of data columns (name, dtype, shape, bytes) and each camera's packets in its span."""
    h = hashlib.sha256()
    for key in sorted(cols):
        arr = np.ascontiguousarray(cols[key])
        h.update(f"{key}|{arr.dtype.str}|{arr.shape}|".encode())
        h.update(arr.tobytes())
    for key in sorted(cameras):
        cam = cameras[key]
        h.update(f"{key}|".encode())
        with av.open(str(cam.path)) as src:
            stream = src.streams.video[0]
            for packet in src.demux(stream):
                if packet.pts is None:
                    continue
                t = float(packet.pts * stream.time_base)
                if cam.from_timestamp - 1e-4 <= t < cam.to_timestamp - 1e-4:
                    h.update(bytes(packet))
    return h.hexdigest()


def read_demoforge_raw(ds: DatasetReader, i: int, *, objects: bool = False,
                       models: EpisodeModels | None = None) -> Episode:
    """A raw demoforge episode (see demoforge.raw.schema)."""
    feats = ds.info.features
    missing = [k for k in (schema.STATE, schema.ACTION) if k not in feats]
    if missing:
        raise BakeError(f"{ds.root}: raw demoforge dataset lacks features {missing} (see demoforge.raw.schema)")
    row, cols = _common(ds, i)
    q, gripper, names = _state_split(ds, cols)
    action = np.asarray(cols[schema.ACTION], dtype=np.float64)
    if action.shape[1] != q.shape[1] + 1:
        raise BakeError(f"{ds.root}: {schema.ACTION!r} has {action.shape[1]} values, {schema.STATE!r} "
                        f"{q.shape[1] + 1}; the raw contract gives both as [arm..., gripper]")
    cameras = _cameras(ds, i, row)
    extra = episode_extras(row)
    sim = cols.get(schema.SIM_STATE)
    poses = object_poses(ds, i, sim, models) if objects else None
    return Episode(
        source=ds.root, index=i, reader="demoforge_raw", fps=ds.info.fps, task=row["tasks"][0],
        time=np.arange(q.shape[0]) / ds.info.fps, q=q, gripper=gripper, joint_names=names,
        target=action[:, :-1], target_gripper=action[:, -1],
        raw_command=None if schema.RAW_COMMAND not in cols else np.asarray(cols[schema.RAW_COMMAND], np.float64),
        sim_state=sim, law=read_law(ds.root), cameras=cameras,
        outcome=extra.get("outcome"), extra=extra, sha256=content_sha256(cols, cameras), objects=poses,
        action=action, action_names=_recorded_action(ds, cols)[1],
    )


def read_lerobot(ds: DatasetReader, i: int, *, objects: bool = False,
                 models: EpisodeModels | None = None) -> Episode:
    """Any other LeRobot v3 episode: state only is interpreted (see the module docstring)."""
    row, cols = _common(ds, i)
    q, gripper, names = _state_split(ds, cols)
    cameras = _cameras(ds, i, row)
    extra = episode_extras(row)
    action, action_names = _recorded_action(ds, cols)
    return Episode(
        source=ds.root, index=i, reader="lerobot", fps=ds.info.fps, task=row["tasks"][0],
        time=np.arange(q.shape[0]) / ds.info.fps, q=q, gripper=gripper, joint_names=names,
        target=None, target_gripper=None, raw_command=None, sim_state=None, law=None, cameras=cameras,
        outcome=extra.get("outcome"), extra=extra, sha256=content_sha256(cols, cameras),
        action=action, action_names=action_names,
    )


# reader name -> function(open dataset, episode index, *, objects, models) -> Episode
READERS = {"demoforge_raw": read_demoforge_raw, "lerobot": read_lerobot}
