"""The harness itself, checked on datasets that the real lerobot wrote.

If lerobot's view of its own datasets disagrees with what pyarrow and PyAV read from the
files, the harness (not demoforge) is wrong; these tests pin that down first.
"""

from __future__ import annotations

import json
from pathlib import Path

import av
import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.lerobot_fixtures import NAMES
from lerobot_harness import FIXTURES, LerobotDump, ProbeFailure, mean_abs_diff01, probe_many, require_dump

pytestmark = pytest.mark.conformance

@pytest.fixture(scope="module")
def dumps(lerobot_python: str, tmp_path_factory) -> dict[str, LerobotDump | ProbeFailure]:
    """All fixtures probed in one lerobot process."""
    results = probe_many(lerobot_python, [FIXTURES / n for n in NAMES], tmp_path_factory.mktemp("probe"))
    return dict(zip(NAMES, results, strict=True))


def _read_data_columns(root: Path) -> dict[str, np.ndarray]:
    """All data parquet files in order, each column stacked into a NumPy array."""
    files = sorted((root / "data").glob("chunk-*/file-*.parquet"))
    table = pq.read_table(files[0]) if len(files) == 1 else None
    if table is None:
        import pyarrow as pa

        table = pa.concat_tables([pq.read_table(f) for f in files])
    out = {}
    for name in table.column_names:
        col = table.column(name).combine_chunks()
        values = col.to_numpy(zero_copy_only=False)
        if values.dtype == object:
            values = np.stack(values)
        out[name] = values
    return out


def _read_tasks(root: Path) -> dict[int, str]:
    """task_index -> task; the task string column is the pandas index, named `task`
    (0.6.1) or `__index_level_0__` (0.4.4)."""
    table = pq.read_table(root / "meta" / "tasks.parquet")
    (task_col,) = [n for n in table.column_names if n != "task_index"]
    return dict(zip(table.column("task_index").to_pylist(), table.column(task_col).to_pylist()))


def _decode_episode_frames(root: Path, key: str, episode: dict, fps: int) -> np.ndarray:
    """Frames of one episode's span, decoded sequentially with PyAV (no seeking)."""
    path = root / f"videos/{key}/chunk-{episode[f'videos/{key}/chunk_index']:03d}" \
        / f"file-{episode[f'videos/{key}/file_index']:03d}.mp4"
    start = episode[f"videos/{key}/from_timestamp"]
    n = int(episode["length"])
    frames = []
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            t = float(frame.pts * frame.time_base)
            if t < start - 0.5 / fps:
                continue
            frames.append(frame.to_ndarray(format="rgb24"))
            if len(frames) == n:
                break
    return np.stack(frames)


@pytest.mark.parametrize("name", NAMES)
def test_lerobot_reads_its_own_fixture_like_pyarrow_and_pyav(name: str, dumps) -> None:
    root = FIXTURES / name
    info = json.loads((root / "meta" / "info.json").read_text())
    dump = require_dump(dumps[name])

    assert dump.meta["num_frames"] == info["total_frames"] == len(dump.tasks)
    assert dump.meta["num_episodes"] == info["total_episodes"]

    data = _read_data_columns(root)
    for key, feature in info["features"].items():
        if feature["dtype"] == "video":
            continue
        expected = data[key].reshape(dump.columns[key].shape)
        np.testing.assert_array_equal(dump.columns[key], expected, err_msg=f"{name}: {key}")

    tasks = _read_tasks(root)
    assert list(dump.tasks) == [tasks[int(i)] for i in data["task_index"]]

    episodes = pq.read_table(root / "meta" / "episodes").to_pylist()
    for key in (k for k, f in info["features"].items() if f["dtype"] == "video"):
        for episode in episodes:
            lo, hi = episode["dataset_from_index"], episode["dataset_to_index"]
            ours = _decode_episode_frames(root, key, episode, info["fps"])
            # Same bitstream, so bit-identical frames up to decoder-build rounding; a frame
            # shifted by one already differs by ~0.008 on these fixtures.
            assert mean_abs_diff01(dump.columns[key][lo:hi], ours) <= 0.002, (name, key, episode["episode_index"])
