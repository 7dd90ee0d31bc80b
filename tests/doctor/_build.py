"""Tiny datasets for the doctor tests: a clean panda-like dataset and ways to break it one defect at a time."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from demoforge.dataset import DatasetWriter, Feature
from demoforge.doctor.limits import card_limits
from demoforge.sim.robot import panda_card

JOINTS, LIMITS = card_limits(panda_card())
NAMES = [*JOINTS, "gripper"]
FEATURES = {
    "observation.state": Feature("float32", (8,), NAMES),
    "action": Feature("float32", (8,), NAMES),
}
LENGTHS = (100, 104, 96, 100, 98, 102)


def sweep(seed: int, length: int) -> np.ndarray:
    """(length + 1, 8): each joint sweeps most of its range once, smoothly; gripper opens and closes."""
    rng = np.random.default_rng(seed)
    s = np.linspace(0.0, 1.0, length + 1)[:, None]
    phase = rng.uniform(0, 2 * np.pi, size=(1, 7))
    u = 0.5 + 0.48 * np.sin(np.pi * s + phase)  # in [0.02, 0.98]
    lo, hi = LIMITS[:, 0], LIMITS[:, 1]
    arm = lo + (hi - lo) * u
    grip = 0.5 + 0.5 * np.sin(2 * np.pi * s + seed)
    return np.concatenate([arm, grip], axis=1).astype(np.float32)


def clean_episodes(lengths=LENGTHS) -> list[dict[str, np.ndarray]]:
    out = []
    for e, n in enumerate(lengths):
        path = sweep(e, n)
        # the sweep covers half a period per episode; alternate direction so the union covers every bin
        if e % 2:
            path = path[::-1].copy()
        out.append({"observation.state": path[:-1].copy(), "action": path[1:].copy()})
    return out


def write(root: Path, episodes: list[dict[str, np.ndarray]], *, features=FEATURES, fps: int = 30,
          robot_type: str | None = None) -> Path:
    with DatasetWriter.create(root, fps=fps, features=features, robot_type=robot_type) as w:
        for cols in episodes:
            w.add_episode(cols, task="sweep the joints")
    return root


def patch_data(root: Path, key: str, fn) -> None:
    """Rewrite column `key` of every data file with fn(episode_index (N,), values (N, n)) -> values."""
    for path in sorted(root.glob("data/**/*.parquet")):
        pf = pq.ParquetFile(path)
        groups = pf.metadata.num_row_groups
        table = pf.read()
        col = table.column(key).combine_chunks()
        ep = table.column("episode_index").to_numpy()
        if pa.types.is_fixed_size_list(col.type):
            n = col.type.list_size
            vals = col.flatten().to_numpy(zero_copy_only=False).reshape(-1, n).copy()
            new = np.asarray(fn(ep, vals), dtype=vals.dtype)
            arr = pa.FixedSizeListArray.from_arrays(pa.array(new.reshape(-1), type=col.type.value_type), n)
        else:
            vals = col.to_numpy(zero_copy_only=False).copy()
            arr = pa.array(np.asarray(fn(ep, vals), dtype=vals.dtype), type=col.type)
        table = table.set_column(table.schema.get_field_index(key), table.schema.field(key), arr)
        pq.write_table(table, path, row_group_size=max(1, table.num_rows // groups))


def patch_json(path: Path, fn) -> None:
    raw = json.loads(path.read_text())
    fn(raw)
    path.write_text(json.dumps(raw))


OPERATORS = ["pick-up", "stack"]  # plan.operator vocabulary of the operator datasets
PLAN_FEATURES = {**FEATURES, "plan.operator": Feature("int64", (1,)), "plan.phase": Feature("int64", (1,))}


def _line(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    return a + (b - a) * np.linspace(0.0, 1.0, n)[:, None]


def operator_episode(detour: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """A two-operator episode of the panda: pick-up moves the arm a little (two phases), a few
    idle frames, then stack moves it back; with `detour` (7,) [rad], stack first swings the arm
    out by that much and back, all within one phase (a joint-space detour the TCP's start and
    end do not need)."""
    home = np.asarray(panda_card().home)
    near = home + np.array([0.4, 0.2, 0.0, -0.3, 0.0, 0.2, 0.0])
    pick = np.concatenate([_line(home, (home + near) / 2, 30), _line((home + near) / 2, near, 30)])
    idle = np.repeat(near[None], 5, axis=0)
    back = _line(near, home, 60) if detour is None else np.concatenate(
        [_line(near, near + detour, 25), _line(near + detour, near, 25), _line(near, home, 30)])
    arm = np.concatenate([pick, idle, back])
    n = len(arm)
    op = np.r_[np.zeros(60), -np.ones(5), np.ones(len(back))].astype(np.int64)
    phase = np.r_[np.zeros(30), np.ones(30), -np.ones(5), np.full(len(back), 4)].astype(np.int64)
    state = np.concatenate([arm, np.zeros((n, 1))], axis=1).astype(np.float32)
    return {"observation.state": state, "action": state.copy(), "plan.operator": op[:, None],
            "plan.phase": phase[:, None]}


def write_operators(root: Path, episodes: list[dict[str, np.ndarray]], *, names=NAMES) -> Path:
    """A raw-like dataset with plan.operator / plan.phase columns and meta/demoforge/vocab.json."""
    features = {**PLAN_FEATURES, "observation.state": Feature("float32", (8,), list(names)),
                "action": Feature("float32", (8,), list(names))}
    with DatasetWriter.create(root, fps=30, features=features) as w:
        for cols in episodes:
            w.add_episode(cols, task="stack")
        w.write_meta_file("vocab.json", {"operators": OPERATORS, "phases": ["approach", "descend", "close", "lift",
                                                                           "carry"], "atoms": []})
    return root
