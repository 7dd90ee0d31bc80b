"""The public reader seam (`demoforge.convert.readers`): the built-in readers are found through it,
a user's reader (registered, or an entry point) makes bake read a new format, and a LeRobot v2.1
dataset bakes to the same data as the v3.0 one it was written from.

No LeRobot v2.1 fixture written by real lerobot exists under tests/fixtures/lerobot (all three are
v3.0), so the v2.1 sources here are written with demoforge's own v2.1 writer (`convert.v21`, which
tests/export checks against lerobot 0.3.3's reader)."""

from __future__ import annotations

import json
from importlib.metadata import EntryPoint
from pathlib import Path

import numpy as np
import pytest

from demoforge.convert import BakeConfig, BakeError, Episode, bake
from demoforge.convert import readers
from demoforge.convert.readers import Reader, reader_for, read_source, register_reader, unregister_reader
from demoforge.convert.v21 import write_v21
from demoforge.dataset import open_dataset
from tests.convert._sources import write_raw
from tests.convert.test_bake_foreign import write_foreign

FPS = 10


def read_jsonl_log(path: Path):
    """A toy user format: one JSON object per line, {"q": [...], "gripper": g}, one episode per file."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    q = np.array([r["q"] for r in rows], dtype=np.float64)
    gripper = np.array([r["gripper"] for r in rows], dtype=np.float64)
    yield Episode(source=path, index=0, reader="jsonl_log", fps=FPS, task="wipe the table",
                  time=np.arange(len(rows)) / FPS, q=q, gripper=gripper, joint_names=("a", "b"), target=None,
                  target_gripper=None, raw_command=None, sim_state=None, law=None,
                  action=np.concatenate([q, gripper[:, None]], axis=1), action_names=("a", "b", "g"))


JSONL = Reader("jsonl_log", detect=lambda p: p.suffix == ".jsonl", episodes=read_jsonl_log,
               describe="one JSON object per tick")


def write_log(path: Path, n: int = 6) -> Path:
    path.write_text("".join(json.dumps({"q": [t / 8, -t / 16], "gripper": t / n}) + "\n" for t in range(n)))
    return path


@pytest.fixture
def jsonl():
    register_reader(JSONL)
    yield JSONL
    unregister_reader(JSONL.name)


def test_built_in_readers_are_found_through_the_seam(tmp_path):
    raw = write_raw(tmp_path / "raw", (5,), cams=())
    foreign = write_foreign(tmp_path / "foreign", (4,))
    assert reader_for(raw).name == "demoforge_raw" and reader_for(foreign).name == "lerobot"
    eps = list(read_source(raw))
    assert [e.reader for e in eps] == ["demoforge_raw"] and eps[0].length == 5
    v21 = write_v21(foreign, tmp_path / "v21")
    assert reader_for(v21).name == "lerobot_v21"


def test_a_registered_reader_makes_bake_read_its_format(jsonl, tmp_path):
    log = write_log(tmp_path / "run.jsonl")
    out = bake([log], tmp_path / "out", BakeConfig(control_space="as_recorded"))
    got = open_dataset(out).read_episode(0)
    t = np.arange(6)
    np.testing.assert_array_equal(got["observation.state"],
                                  np.stack([t / 8, -t / 16, t / 6], axis=1).astype(np.float32))
    np.testing.assert_array_equal(got["action"], got["observation.state"])
    stamp = json.loads((out / "meta/bake.json").read_text())
    assert stamp["sources"][0] == {"root": str(log), "reader": "jsonl_log", "episodes": stamp["sources"][0]["episodes"]}
    assert open_dataset(out).tasks == ["wipe the table"]


def test_dataset_readers_lists_users_readers_first(jsonl):
    from typer.testing import CliRunner

    from demoforge.cli.main import app

    result = CliRunner().invoke(app, ["dataset", "readers"])
    assert result.exit_code == 0
    names = [line.split(":")[0] for line in result.output.splitlines()]
    assert names == ["jsonl_log", "demoforge_raw", "lerobot", "lerobot_v21", "robomimic_hdf5"]


def test_an_unknown_format_lists_the_readers_and_how_to_add_one(tmp_path):
    path = write_log(tmp_path / "run.jsonl")
    with pytest.raises(BakeError, match=r"run\.jsonl: no reader recognises it \(readers: demoforge_raw: .*"
                                        r"robomimic_hdf5: .*\); register one for its format with "
                                        r"demoforge.convert.readers.register_reader or a 'demoforge.readers'"):
        bake([path], tmp_path / "out", BakeConfig(control_space="as_recorded"))


def test_a_reader_name_cannot_be_taken_twice(jsonl):
    with pytest.raises(BakeError, match=r"a reader named 'robomimic_hdf5' exists already"):
        register_reader(Reader("robomimic_hdf5", detect=lambda p: False, episodes=read_jsonl_log))


def test_an_entry_point_in_demoforge_readers_registers_a_reader(monkeypatch, tmp_path):
    ep = EntryPoint("jsonl_log", "tests.convert.test_readers:JSONL", readers.ENTRY_POINT_GROUP)
    monkeypatch.setattr(readers, "entry_points", lambda group: [ep] if group == readers.ENTRY_POINT_GROUP else [])
    monkeypatch.setattr(readers, "_LOADED", [])
    try:
        assert reader_for(write_log(tmp_path / "x.jsonl")) is JSONL
        bad = EntryPoint("broken", "tests.convert.no_such_module:READER", readers.ENTRY_POINT_GROUP)
        monkeypatch.setattr(readers, "entry_points", lambda group: [bad])
        monkeypatch.setattr(readers, "_LOADED", [])
        with pytest.raises(BakeError, match=r"entry point 'broken' = 'tests.convert.no_such_module:READER' in "
                                            r"group 'demoforge.readers' does not load \(ModuleNotFoundError"):
            readers.registered()
    finally:
        unregister_reader(JSONL.name)


def test_lerobot_v21_bakes_to_the_data_of_its_v3_original(tmp_path):
    raw = write_raw(tmp_path / "raw", (12, 9))
    v3 = bake([raw], tmp_path / "v3", BakeConfig(control_space="joint_vel"))
    v21 = write_v21(v3, tmp_path / "v21")
    again = bake([v21], tmp_path / "again", BakeConfig(control_space="as_recorded"))
    a, b = open_dataset(v3), open_dataset(again)
    assert b.num_episodes == 2 and b.info.video_keys == a.info.video_keys
    for i in range(2):
        x, y = a.read_episode(i), b.read_episode(i)
        np.testing.assert_array_equal(x["observation.state"], y["observation.state"])
        np.testing.assert_array_equal(x["action"], y["action"])
        for key in a.info.video_keys:  # packets copied, never re-encoded: the same pixels
            np.testing.assert_array_equal(a.read_video(i, key), b.read_video(i, key))
    stamp = json.loads((again / "meta/bake.json").read_text())
    assert stamp["sources"][0]["reader"] == "lerobot_v21" and stamp["sources"][0]["root"] == str(v21)


def test_a_broken_v21_dataset_is_refused_with_its_problems(tmp_path):
    v21 = write_v21(write_foreign(tmp_path / "foreign", (4, 5)), tmp_path / "v21")
    next(v21.glob("data/chunk-000/episode_000001.parquet")).unlink()
    with pytest.raises(BakeError, match=r"(?s)v21: a LeRobot v2.1 dataset with 1 problem\(s\).*"
                                        r"\[file.missing\] data/chunk-000/episode_000001.parquet"):
        bake([v21], tmp_path / "out", BakeConfig(control_space="as_recorded"))
