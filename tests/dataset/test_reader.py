"""The reader against lerobot-written fixtures: values equal pyarrow's, one episode read alone."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import av
import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from demoforge.dataset.reader import open_dataset, read_tasks
from demoforge.dataset import DatasetWriter, Feature, VideoSettings
from demoforge.dataset.check import check_dataset
from demoforge.errors import DatasetError
from tests.dataset._synth import FEATURES, episode

# Real lerobot-written datasets, shared beside the checkout (read-only; tests copy before changing).
from tests.lerobot_fixtures import FIXTURES
NAMES = ["lerobot044_video", "lerobot061_state_only", "lerobot061_video"]
VIDEO_NAMES = ["lerobot044_video", "lerobot061_video"]



def writable_copy(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(FIXTURES / name, dst, copy_function=shutil.copyfile)
    for dirpath, _, _ in os.walk(dst):
        os.chmod(dirpath, 0o755)
    return dst


@pytest.mark.parametrize("name", NAMES)
def test_metadata_matches_files(name):
    root = FIXTURES / name
    ds = open_dataset(root)
    episodes = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    assert ds.num_episodes == len(episodes) == ds.info.total_episodes == 3
    assert ds.num_frames == ds.info.total_frames == 300
    assert ds.tasks == ["pick the cube", "place the cube"]
    assert ds.episode(1) == episodes[1]
    assert [e["episode_index"] for e in ds.iter_episodes()] == [0, 1, 2]


@pytest.mark.parametrize("name", NAMES)
def test_read_episode_equals_pyarrow(name):
    root = FIXTURES / name
    ds = open_dataset(root)
    table = pq.read_table(root / "data/chunk-000/file-000.parquet")
    for i in range(ds.num_episodes):
        got = ds.read_episode(i)
        want = table.filter(pc.equal(table.column("episode_index"), i))
        assert set(got) == set(ds.info.data_keys)
        state = np.asarray(want.column("observation.state").to_pylist(), dtype=np.float32)
        assert got["observation.state"].dtype == np.float32 and got["observation.state"].shape == (100, 8)
        np.testing.assert_array_equal(got["observation.state"], state)
        np.testing.assert_array_equal(got["action"], np.asarray(want.column("action").to_pylist(), np.float32))
        for key in ("timestamp", "frame_index", "episode_index", "index", "task_index"):
            np.testing.assert_array_equal(got[key], want.column(key).to_numpy())
        assert got["index"][0] == ds.episode(i)["dataset_from_index"]
    assert got["timestamp"].dtype == np.float32 and got["index"].dtype == np.int64


def test_read_episode_selected_columns():
    ds = open_dataset(FIXTURES / "lerobot061_state_only")
    got = ds.read_episode(2, ["action", "frame_index"])
    assert list(got) == ["action", "frame_index"]
    np.testing.assert_array_equal(got["frame_index"], np.arange(100))


def test_read_episode_reads_only_its_row_group(monkeypatch):
    calls = []
    real = pq.ParquetFile.read_row_groups

    def spy(self, row_groups, *args, **kwargs):
        calls.append(list(row_groups))
        return real(self, row_groups, *args, **kwargs)

    def forbidden(*args, **kwargs):
        raise AssertionError("the whole data file was read")

    ds = open_dataset(FIXTURES / "lerobot061_video")  # loads metadata tables; not under test
    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    monkeypatch.setattr(pq.ParquetFile, "read", forbidden)
    monkeypatch.setattr(pq, "read_table", forbidden)
    assert ds.read_episode(1)["episode_index"].tolist() == [1] * 100
    assert calls == [[1]]


def _all_frames(path: Path) -> np.ndarray:
    with av.open(str(path)) as c:
        return np.stack([f.to_ndarray(format="rgb24") for f in c.decode(c.streams.video[0])])


@pytest.mark.parametrize("name", VIDEO_NAMES)
def test_read_video_matches_sequential_decode(name):
    root = FIXTURES / name
    ds = open_dataset(root)
    key = "observation.images.front"
    everything = _all_frames(root / "videos" / key / "chunk-000/file-000.mp4")
    assert everything.shape == (300, 96, 96, 3)
    for i in range(ds.num_episodes):
        frames = ds.read_video(i, key)
        assert frames.dtype == np.uint8 and frames.shape == (100, 96, 96, 3)
        np.testing.assert_array_equal(frames, everything[100 * i: 100 * (i + 1)])
    picked = ds.read_video(1, key, [99, 0, 50, 50])
    np.testing.assert_array_equal(picked, everything[[199, 100, 150, 150]])
    at = ds.read_video_at(2, key, [0.0, 10 / 30, 99 / 30])
    np.testing.assert_array_equal(at, everything[[200, 210, 299]])
    assert ds.read_video(0, key, []).shape == (0, 96, 96, 3)


def test_bad_requests_name_what_exists():
    ds = open_dataset(FIXTURES / "lerobot061_video")
    with pytest.raises(DatasetError, match=r"no episode 3; episodes are 0\.\.2"):
        ds.read_episode(3)
    with pytest.raises(DatasetError, match=r"unknown columns \['nope'\].*observation\.state"):
        ds.read_episode(0, ["nope"])
    with pytest.raises(DatasetError, match="are videos, read them with read_video"):
        ds.read_episode(0, ["observation.images.front"])
    with pytest.raises(DatasetError, match=r"no video feature 'observation\.state'.*observation\.images\.front"):
        ds.read_video(0, "observation.state")
    with pytest.raises(DatasetError, match=r"frame indices \[100\] outside 0\.\.99"):
        ds.read_video(0, "observation.images.front", [0, 100])
    with pytest.raises(DatasetError, match="outside the episode"):
        ds.read_video_at(0, "observation.images.front", [3.5])
    with pytest.raises(DatasetError, match="no frame within"):
        ds.read_video_at(0, "observation.images.front", [0.01])


def test_missing_files_are_named(tmp_path):
    root = writable_copy("lerobot061_video", tmp_path)
    (root / "videos/observation.images.front/chunk-000/file-000.mp4").unlink()
    (root / "data/chunk-000/file-000.parquet").unlink()
    ds = open_dataset(root)
    with pytest.raises(DatasetError, match=r"file-000\.mp4: video file not found"):
        ds.read_video(0, "observation.images.front")
    with pytest.raises(DatasetError, match=r"file-000\.parquet: data file of episode 0 not found"):
        ds.read_episode(0)
    (root / "meta/info.json").unlink()
    with pytest.raises(DatasetError, match=r"info\.json: not found"):
        open_dataset(root)


def test_tasks_without_known_index_column_fail_clearly(tmp_path):
    import pyarrow as pa

    root = writable_copy("lerobot061_state_only", tmp_path)
    pq.write_table(pa.table({"task_index": [0, 1], "name": ["a", "b"]}), root / "meta/tasks.parquet")
    with pytest.raises(DatasetError, match=r"needs columns 'task_index' and one of \['task', '__index_level_0__'\]"):
        read_tasks(root)


@pytest.mark.parametrize("video", [VideoSettings(), VideoSettings.lerobot_default()], ids=["h264", "av1"])
def test_round_trip_with_writer(tmp_path, video):
    """Several episodes share each data and video file (and the caps split them): all read back."""
    features = {**FEATURES, "observation.flag": Feature("bool", (2,)), "reward": Feature("float64", (1,))}
    written = []
    root = tmp_path / "ds"
    with DatasetWriter.create(root, fps=30, features=features, video=video, data_file_size_mb=0.002,
                              video_file_duration_s=1.5) as w:
        for seed in range(4):
            cols = episode(seed, length=18 + seed)
            cols["observation.flag"] = (np.arange(2 * (18 + seed)).reshape(-1, 2) % 3 == 0)
            cols["reward"] = np.linspace(0, 1, 18 + seed).reshape(-1, 1)
            written.append(cols)
            w.add_episode(cols, task=f"task {seed % 2}", extra={"seed": seed})
    assert check_dataset(root) == []
    ds = open_dataset(root)
    assert (ds.num_episodes, ds.num_frames, ds.tasks) == (4, 18 + 19 + 20 + 21, ["task 0", "task 1"])
    key = "observation.images.front"
    files = {(ds.episode(i)["data/file_index"], ds.episode(i)[f"videos/{key}/file_index"]) for i in range(4)}
    assert len({f[0] for f in files}) > 1 and len({f[1] for f in files}) > 1  # the caps were exercised
    start = 0
    for i, cols in enumerate(written):
        got = ds.read_episode(i)
        t = len(cols["action"])
        for k in ("observation.state", "action", "observation.flag"):
            assert got[k].dtype == cols[k].dtype
            np.testing.assert_array_equal(got[k], cols[k])
        np.testing.assert_array_equal(got["reward"], cols["reward"][:, 0])  # shape (1,) comes back as (T,)
        np.testing.assert_array_equal(got["frame_index"], np.arange(t))
        np.testing.assert_array_equal(got["index"], np.arange(start, start + t))
        np.testing.assert_array_equal(got["timestamp"], (np.arange(t) / 30).astype(np.float32))
        start += t
        assert json.loads(ds.episode(i)["demoforge/seed"]) == i  # extra columns come through verbatim
        frames = ds.read_video(i, key)
        assert frames.shape == cols[key].shape and frames.dtype == np.uint8
        assert np.abs(frames / 255.0 - cols[key] / 255.0).mean() <= 0.05
        np.testing.assert_array_equal(ds.read_video(i, key, [t - 1, 3]), frames[[t - 1, 3]])
        np.testing.assert_array_equal(ds.read_video_at(i, key, [3 / 30]), frames[[3]])
