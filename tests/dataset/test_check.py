"""check_dataset passes the lerobot fixtures and catches each corruption made in a copy."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from demoforge.dataset.check import check_dataset
from demoforge.dataset.problem import Problem

from tests.lerobot_fixtures import FIXTURES
NAMES = ["lerobot044_video", "lerobot061_state_only", "lerobot061_video"]
KEY = "observation.images.front"
EPISODES = "meta/episodes/chunk-000/file-000.parquet"
DATA = "data/chunk-000/file-000.parquet"
VIDEO = f"videos/{KEY}/chunk-000/file-000.mp4"



def writable_copy(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(FIXTURES / name, dst, copy_function=shutil.copyfile)
    for dirpath, _, _ in os.walk(dst):
        os.chmod(dirpath, 0o755)
    return dst


def edit_parquet(path: Path, column: str, fn) -> None:
    """Rewrite one column of a parquet file, keeping schema metadata and one row group per 100 rows."""
    table = pq.read_table(path)
    values = table.column(column).to_numpy().copy()
    fn(values)
    i = table.schema.get_field_index(column)
    table = table.set_column(i, table.schema.field(i), pa.array(values, type=table.schema.field(i).type))
    pq.write_table(table, path, row_group_size=100)


def edit_json(path: Path, fn) -> None:
    obj = json.loads(path.read_text())
    fn(obj)
    path.write_text(json.dumps(obj, indent=4))


def codes(problems: list[Problem]) -> set[str]:
    return {p.code for p in problems}


@pytest.fixture
def video_root(tmp_path) -> Path:
    return writable_copy("lerobot061_video", tmp_path)


@pytest.mark.parametrize("name", NAMES)
def test_fixtures_pass(name):
    assert check_dataset(FIXTURES / name) == []


def test_deleted_video_file(video_root):
    (video_root / VIDEO).unlink()
    problems = check_dataset(video_root)
    assert [(p.code, p.file) for p in problems] == [("file.missing", VIDEO)]
    assert "episodes [0, 1, 2]" in problems[0].message


def test_deleted_data_file(video_root):
    (video_root / DATA).unlink()
    assert [(p.code, p.file) for p in check_dataset(video_root)] == [("file.missing", DATA)]


def test_shifted_dataset_from_index(video_root):
    def shift(v):
        v[1] += 1

    edit_parquet(video_root / EPISODES, "dataset_from_index", shift)
    problems = check_dataset(video_root)
    assert {"episodes.range", "data.index"} <= codes(problems)
    assert all("episode 1" in p.message for p in problems)
    assert any("dataset_from_index is 101, expected 100" in p.message for p in problems)


def test_wrong_total_frames(video_root):
    edit_json(video_root / "meta/info.json", lambda info: info.update(total_frames=299))
    problems = check_dataset(video_root)
    assert [p.code for p in problems] == ["count.frames"]
    assert "total_frames is 299 but episode lengths sum to 300" in problems[0].message


def test_wrong_total_episodes_and_tasks(video_root):
    edit_json(video_root / "meta/info.json", lambda info: info.update(total_episodes=4, total_tasks=1))
    assert codes(check_dataset(video_root)) == {"count.episodes", "count.tasks"}


def test_broken_timestamp(video_root):
    def bump(v):
        v[150] += 0.01

    edit_parquet(video_root / DATA, "timestamp", bump)
    problems = check_dataset(video_root)
    assert [p.code for p in problems] == ["data.timestamp"]
    assert "episode 1: timestamp at frame 50" in problems[0].message


def test_broken_frame_and_task_index(video_root):
    def frame(v):
        v[10] = 11

    def task(v):
        v[250] = 7

    edit_parquet(video_root / DATA, "frame_index", frame)
    edit_parquet(video_root / DATA, "task_index", task)
    problems = check_dataset(video_root)
    assert [p.code for p in problems] == ["data.frame_index", "data.task_index"]
    assert "episode 0: frame_index at row 10 is 11, expected 10" in problems[0].message
    assert any("episode 2: task_index [7] not in 0..1" in p.message for p in problems)


def test_video_span_one_frame_short(video_root):
    def shorten(v):
        v[0] -= 1 / 30

    edit_parquet(video_root / EPISODES, f"videos/{KEY}/to_timestamp", shorten)
    problems = check_dataset(video_root)
    assert codes(problems) == {"video.frames", "video.span"}
    assert any("episode 0: 99 frames in span" in p.message and "has 100 frames" in p.message for p in problems)


def test_video_span_misaligned_by_half_a_frame(video_root):
    def shift(v):
        v[2] += 0.5 / 30

    edit_parquet(video_root / EPISODES, f"videos/{KEY}/from_timestamp", shift)
    edit_parquet(video_root / EPISODES, f"videos/{KEY}/to_timestamp", shift)
    problems = check_dataset(video_root)
    assert "video.frames" in codes(problems) or "video.timestamps" in codes(problems)
    assert all("episode 2" in p.message for p in problems)


def test_video_resolution_mismatch(video_root):
    def shrink(info):
        info["features"][KEY]["shape"] = [64, 96, 3]
        info["features"][KEY]["info"]["video.height"] = 64

    edit_json(video_root / "meta/info.json", shrink)
    problems = check_dataset(video_root)
    assert [p.code for p in problems] == ["video.size"]
    assert any("frames are 96x96" in p.message for p in problems)


def test_missing_stats_key(video_root):
    def drop(stats):
        del stats["action"]
        del stats["observation.state"]["std"]

    edit_json(video_root / "meta/stats.json", drop)
    problems = check_dataset(video_root)
    assert [p.code for p in problems] == ["stats", "stats"]
    assert "['action'] have no statistics" in problems[0].message
    assert "'observation.state' lacks ['std']" in problems[1].message


def test_unreferenced_file(video_root):
    shutil.copyfile(video_root / DATA, video_root / "data/chunk-000/file-001.parquet")
    assert [(p.code, p.file) for p in check_dataset(video_root)] == [
        ("file.unreferenced", "data/chunk-000/file-001.parquet")
    ]


def test_reports_every_problem_at_once(video_root):
    (video_root / VIDEO).unlink()
    edit_json(video_root / "meta/info.json", lambda info: info.update(total_frames=1))
    edit_json(video_root / "meta/stats.json", lambda stats: stats.pop("timestamp"))
    edit_parquet(video_root / DATA, "timestamp", lambda v: v.__setitem__(5, 9.0))
    assert codes(check_dataset(video_root)) == {"file.missing", "count.frames", "stats", "data.timestamp"}


def test_missing_or_invalid_info(video_root):
    (video_root / "meta/info.json").write_text("{not json")
    assert [p.code for p in check_dataset(video_root)] == ["info"]
    (video_root / "meta/info.json").unlink()
    problems = check_dataset(video_root)
    assert [(p.code, p.file) for p in problems] == [("info", "meta/info.json")]


def test_index_feature_with_wrong_dtype(video_root):
    edit_json(video_root / "meta/info.json", lambda info: info["features"]["index"].update(dtype="int32"))
    problems = check_dataset(video_root)
    assert any(p.code == "info" and "'index' must be int64 [1], is int32 [1]" in p.message for p in problems)


def test_state_only_checks_without_video():
    assert check_dataset(FIXTURES / "lerobot061_state_only") == []
    assert np.asarray(pq.read_table(FIXTURES / "lerobot061_state_only" / EPISODES).column("length")).sum() == 300


def test_info_shape_disagrees_with_data(video_root):
    edit_json(video_root / "meta/info.json", lambda info: info["features"]["action"].update(shape=[7]))
    problems = check_dataset(video_root)
    assert [p.code for p in problems] == ["data.columns", "stats"]
    assert "column 'action': stored as list of [8] but info.json gives shape [7]" in problems[0].message
    assert "'action': min has shape [8], max has shape [8]" in problems[1].message


def test_info_dtype_disagrees_with_data(video_root):
    edit_json(video_root / "meta/info.json", lambda info: info["features"]["action"].update(dtype="float64"))
    problems = check_dataset(video_root)
    assert [(p.code, p.message) for p in problems] == [
        ("data.columns", "column 'action': elements are float but info.json says float64")
    ]


def test_tasks_without_pandas_index_metadata(video_root):
    table = pq.read_table(video_root / "meta/tasks.parquet").replace_schema_metadata(None)
    pq.write_table(table, video_root / "meta/tasks.parquet")
    problems = check_dataset(video_root)
    assert [p.code for p in problems] == ["tasks"]
    assert "lerobot would read task strings as integers" in problems[0].message


def test_video_codec_disagrees_with_info(video_root):
    edit_json(video_root / "meta/info.json", lambda info: info["features"][KEY]["info"].update({"video.codec": "h264"}))
    problems = check_dataset(video_root)
    assert [(p.code, p.file) for p in problems] == [("video.settings", VIDEO)]
    assert "video.codec is 'h264' but the file has 'av1'" in problems[0].message
