"""robomimic's HDF5 layout, in which robomimic, MimicGen and robosuite users hold demonstrations.

The layout, as robomimic documents it (docs/datasets/overview.md) and writes it
(robomimic/scripts/dataset_states_to_obs.py):

    data/                   group; attrs: total (samples over all demos), env_args (JSON object:
                            env_name, env_type, env_kwargs; robosuite's control_freq [Hz] in env_kwargs)
      demo_<i>/             one group per trajectory; attrs: num_samples, model_file (MJCF, optional)
        actions             (N, A) environment actions
        states              (N, S) flattened MuJoCo states (optional)
        rewards, dones      (N,) (optional)
        obs/<key>           (N, d) low-dimensional or (N, H, W, 3) uint8 images (`<camera>_image`)
        next_obs/<key>      (optional; not read by demoforge)
    mask/<filter>           optional: demo names of a split ("train", "valid")

This module owns the layout: its names, the structure check (`check_hdf5`, used by
`demoforge dataset check`) and the writer of one file (`HDF5Writer`, used by
`rollout --output-format hdf5`). h5py is an optional extra: `require_h5py` names it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from demoforge.dataset.problem import Problem
from demoforge.errors import DatasetError

INSTALL = "pip install 'demoforge[hdf5]'"
SUFFIXES = (".hdf5", ".h5", ".he5")
MAGIC = b"\x89HDF\r\n\x1a\n"  # the HDF5 superblock signature (at offset 0 for files h5py writes)
DATA = "data"
MASK = "mask"
DEMO_PATTERN = re.compile(r"demo_(\d+)")
ACTIONS, STATES, REWARDS, DONES, OBS = "actions", "states", "rewards", "dones", "obs"
IMAGE_SUFFIX = "_image"  # robosuite's camera observations: <camera>_image, (N, H, W, 3) uint8


def require_h5py(path: str | Path):
    """The h5py module, or a DatasetError naming `path` and the extra that installs it."""
    try:
        import h5py
    except ImportError as exc:
        raise DatasetError(f"{path}: reading or writing HDF5 needs h5py, which is not installed; "
                           f"{INSTALL}") from exc
    return h5py


def is_hdf5(path: str | Path) -> bool:
    """True for a file named like HDF5 or starting with the HDF5 signature."""
    path = Path(path)
    if not path.is_file():
        return False
    if path.suffix.lower() in SUFFIXES:
        return True
    with path.open("rb") as f:
        return f.read(len(MAGIC)) == MAGIC


def demo_names(data) -> list[str]:
    """The `demo_<i>` groups of `data`, by their number (robomimic's order; demo_10 after demo_9)."""
    names = [k for k in data.keys() if DEMO_PATTERN.fullmatch(k)]
    return sorted(names, key=lambda k: int(DEMO_PATTERN.fullmatch(k).group(1)))


def env_args(data, out: list[Problem] | None = None) -> dict[str, Any] | None:
    """`data.attrs["env_args"]` parsed; None (with a problem appended to `out`) when absent or not a JSON object."""
    raw = data.attrs.get("env_args")
    shape = "a JSON object {env_name, env_type, env_kwargs}"
    if raw is None:
        problem = f"has no env_args attribute; robomimic's layout stores the environment's metadata there as {shape}"
    else:
        try:
            value = json.loads(raw.decode() if isinstance(raw, bytes) else str(raw))
        except ValueError as exc:
            value, problem = None, f"env_args is not JSON ({exc}); it must be {shape}"
        else:
            if isinstance(value, dict):
                return value
            problem = f"env_args is {type(value).__name__} {value!r}, not {shape}"
    if out is not None:
        out.append(Problem("hdf5.env_args", DATA, problem))
    return None


def control_freq(args: Mapping[str, Any]) -> int | None:
    """The control rate [Hz] robosuite stores in env_args' env_kwargs, when it is a positive integer."""
    kwargs = args.get("env_kwargs")
    value = kwargs.get("control_freq") if isinstance(kwargs, dict) else None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def check_hdf5(path: str | Path) -> list[Problem]:
    """Every structural problem of the robomimic-layout file at `path` (empty: sound). Each
    problem's `file` is the group or dataset inside the file."""
    path = Path(path)
    h5py = require_h5py(path)
    out: list[Problem] = []
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        return [Problem("hdf5.open", ".", f"cannot be opened as HDF5 ({exc})")]
    with f:
        data = f.get(DATA)
        if not isinstance(data, h5py.Group):
            have = sorted(f.keys())
            return [Problem("hdf5.data", DATA, f"no {DATA!r} group (the file holds {have}); robomimic's layout "
                                               "keeps every demo under /data/demo_<i>")]
        args = env_args(data, out)
        if args is not None and control_freq(args) is None:
            kwargs = args.get("env_kwargs")
            got = kwargs.get("control_freq") if isinstance(kwargs, dict) else None
            out.append(Problem("hdf5.control_freq", DATA, f"env_args.env_kwargs.control_freq is {got!r}; it must be "
                                                          "the control rate in Hz (robosuite's default is 20); "
                                                          "set it in a copy of the file"))
        names = demo_names(data)
        if not names:
            out.append(Problem("hdf5.demos", DATA, f"no demo_<i> groups (it holds {sorted(data.keys())})"))
        total = 0
        for name in names:
            total += _check_demo(data[name], f"{DATA}/{name}", h5py, out)
        declared = data.attrs.get("total")
        if declared is None:
            out.append(Problem("hdf5.total", DATA, f"no 'total' attribute; it must be the number of samples in "
                                                   f"all demos ({total})"))
        elif int(declared) != total:
            out.append(Problem("hdf5.total", DATA, f"total is {int(declared)} but the demos hold {total} samples; "
                                                   f"set it to {total}"))
        mask = f.get(MASK)
        if isinstance(mask, h5py.Group):
            for key in sorted(mask.keys()):
                listed = [v.decode() if isinstance(v, bytes) else str(v) for v in np.asarray(mask[key]).ravel()]
                unknown = [n for n in listed if n not in names]
                if unknown:
                    out.append(Problem("hdf5.mask", f"{MASK}/{key}", f"names demos {unknown} that /data does not "
                                                                     "hold"))
    return out


def _check_demo(demo, where: str, h5py, out: list[Problem]) -> int:
    """Append `demo`'s problems; returns its sample count (num_samples, else len(actions), else 0)."""
    if not isinstance(demo, h5py.Group):
        out.append(Problem("hdf5.demo", where, "is not a group; each demo is a group holding actions and obs/"))
        return 0
    actions = demo.get(ACTIONS)
    n = None
    if not isinstance(actions, h5py.Dataset):
        out.append(Problem("hdf5.actions", f"{where}/{ACTIONS}", f"missing; every demo holds its (N, A) actions "
                                                                 f"(it holds {sorted(demo.keys())})"))
    elif actions.ndim != 2 or actions.shape[0] == 0:
        out.append(Problem("hdf5.actions", f"{where}/{ACTIONS}", f"has shape {actions.shape}; it must be (N, A) "
                                                                 "with N >= 1"))
    else:
        n = actions.shape[0]
        if not np.isfinite(np.asarray(actions, dtype=np.float64)).all():
            out.append(Problem("hdf5.nan", f"{where}/{ACTIONS}", "holds NaN or infinite values"))
    declared = demo.attrs.get("num_samples")
    if declared is None:
        out.append(Problem("hdf5.num_samples", where, f"no num_samples attribute; it must be the demo's length "
                                                      f"({n if n is not None else 'len(actions)'})"))
    elif n is not None and int(declared) != n:
        out.append(Problem("hdf5.length", where, f"num_samples is {int(declared)} but actions has {n} rows"))
    if n is None and declared is not None:
        n = int(declared)
    obs = demo.get(OBS)
    if not isinstance(obs, h5py.Group):
        out.append(Problem("hdf5.obs", f"{where}/{OBS}", "missing; robomimic's observations are datasets "
                                                         "obs/<key> (extract them with dataset_states_to_obs.py)"))
    per_tick = [(f"{where}/{k}", demo[k]) for k in (STATES, REWARDS, DONES) if k in demo]
    if isinstance(obs, h5py.Group):
        per_tick += [(f"{where}/{OBS}/{k}", obs[k]) for k in sorted(obs.keys())]
    for name, ds in per_tick:
        if not isinstance(ds, h5py.Dataset):
            out.append(Problem("hdf5.obs", name, "is not a dataset"))
        elif n is not None and (ds.ndim == 0 or ds.shape[0] != n):
            out.append(Problem("hdf5.length", name, f"has {ds.shape[0] if ds.ndim else 'no'} rows, the demo "
                                                    f"{n} (num_samples / actions); every per-step dataset has N rows"))
        elif ds.dtype.kind == "f" and ds.ndim <= 2 and not np.isfinite(np.asarray(ds)).all():
            out.append(Problem("hdf5.nan", name, "holds NaN or infinite values"))
    return n or 0


class HDF5Writer:
    """Writes one robomimic-layout file, demo by demo, under a temporary name renamed into place
    on a clean exit (a failed write leaves nothing at `path`). Use as a context manager."""

    def __init__(self, path: str | Path, env_meta: Mapping[str, Any]):
        self.path = Path(path)
        h5py = require_h5py(self.path)
        if self.path.exists():
            raise DatasetError(f"{self.path}: exists; choose a new file (demoforge never writes over its inputs)")
        self._tmp = self.path.with_name(f".{self.path.name}.partial")
        self._tmp.unlink(missing_ok=True)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # no timestamps in the file's object headers: same demos, same bytes
        self._file = h5py.File(self._tmp, "w", track_order=True)
        self._data = self._file.create_group(DATA, track_order=True)
        self._data.attrs["env_args"] = json.dumps(dict(env_meta), sort_keys=True)
        self._total = 0
        self._count = 0

    def __enter__(self) -> "HDF5Writer":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._data.attrs["total"] = self._total
        self._file.close()
        if exc_type is None:
            self._tmp.replace(self.path)
        else:
            self._tmp.unlink(missing_ok=True)

    def add_demo(self, *, actions: np.ndarray, obs: Mapping[str, np.ndarray], states: np.ndarray | None = None,
                 rewards: np.ndarray | None = None, dones: np.ndarray | None = None,
                 attrs: Mapping[str, Any] | None = None) -> str:
        """Write the next demo_<i> (every array with N rows); returns its name."""
        n = len(actions)
        arrays = {ACTIONS: actions, STATES: states, REWARDS: rewards, DONES: dones,
                  **{f"{OBS}/{k}": v for k, v in obs.items()}}
        bad = {k: np.shape(v) for k, v in arrays.items() if v is not None and (np.ndim(v) == 0 or len(v) != n)}
        if bad:
            raise DatasetError(f"{self.path}: demo_{self._count}: {bad} do not have the actions' {n} rows")
        name = f"demo_{self._count}"
        demo = self._data.create_group(name, track_order=True)
        for key, value in arrays.items():
            if value is not None:
                demo.create_dataset(key, data=np.asarray(value))
        demo.attrs["num_samples"] = n
        for key, value in (attrs or {}).items():
            demo.attrs[key] = value
        self._total += n
        self._count += 1
        return name
