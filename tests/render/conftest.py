"""A tiny raw dataset for the render tests: two executed pick-and-place episodes, each cut
to 16 ticks spread over the whole episode (the states are snapshots, so any subset replays)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from demoforge.dataset import DatasetWriter, open_dataset
from demoforge.dataset.assemble import EXTRA_PREFIX, HISTOGRAM_PREFIX
from demoforge.dataset.layout import DEMOFORGE_META_DIR, INDEX_FEATURE_NAMES
from demoforge.execute import generate
from demoforge.tasks import generate_family, write_tasks

TICKS = 16


def shorten(source: Path, out: Path, ticks: int) -> Path:
    """`source` with each episode cut to `ticks` evenly spaced ticks (meta/demoforge copied)."""
    reader = open_dataset(source)
    keys = [k for k in reader.info.features if k not in INDEX_FEATURE_NAMES]
    with DatasetWriter.create(out, fps=reader.info.fps, features={k: reader.info.features[k] for k in keys},
                              robot_type=reader.info.robot_type) as writer:
        for i in reader.episode_indices:
            row, cols = reader.episode(i), reader.read_episode(i, keys)
            rows = np.linspace(0, len(cols[keys[0]]) - 1, ticks).round().astype(int)
            extra = {k[len(EXTRA_PREFIX):]: json.loads(v) for k, v in row.items()
                     if k.startswith(EXTRA_PREFIX) and not k.startswith(HISTOGRAM_PREFIX) and v is not None}
            writer.add_episode({k: v[rows] for k, v in cols.items()}, task=row["tasks"][0], extra=extra)
    shutil.copytree(source / DEMOFORGE_META_DIR / "scenes", out / DEMOFORGE_META_DIR / "scenes")
    return out


@pytest.fixture(scope="session")
def full_raw(tmp_path_factory) -> Path:
    """Two executed pick-and-place episodes (hundreds of ticks each)."""
    folder = tmp_path_factory.mktemp("render-raw")
    paths = write_tasks(generate_family("pnp", count=1, seed=11), folder / "tasks")
    pddl = [p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl"]
    return generate(pddl, folder / "run", episodes_per_problem=2, envs=1, seed=4).roots["success"]


@pytest.fixture(scope="session")
def raw(full_raw, tmp_path_factory) -> Path:
    """The same two episodes cut to TICKS ticks each."""
    return shorten(full_raw, tmp_path_factory.mktemp("render-short") / "raw", TICKS)
