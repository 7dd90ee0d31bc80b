"""`demoforge dataset check|info` on a dataset written by our writer and on a broken copy."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.dataset import DatasetWriter
from tests.dataset._synth import FEATURES, episode

runner = CliRunner()


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli") / "ds"
    with DatasetWriter.create(root, fps=15, features=FEATURES, robot_type="probe_bot") as w:
        for seed in range(2):
            w.add_episode(episode(seed, length=12), task=["stack the cubes", "open the drawer"][seed])
    return root


def test_check_ok_is_one_line(root):
    result = runner.invoke(app, ["dataset", "check", str(root)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [f"OK {root}: 2 episodes, 24 frames, 2 tasks, 1 video features"]


def test_check_lists_every_problem_and_fails(root, tmp_path):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(root, broken)
    next((broken / "videos").rglob("*.mp4")).unlink()
    info = json.loads((broken / "meta/info.json").read_text())
    info["total_frames"] = 99
    (broken / "meta/info.json").write_text(json.dumps(info))
    result = runner.invoke(app, ["dataset", "check", str(broken)])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == f"FAILED {broken}: 2 problems"
    assert any("[file.missing] videos/observation.images.front/chunk-000/file-000.mp4" in x for x in lines)
    assert any("[count.frames] meta/info.json: total_frames is 99" in x for x in lines)

    result = runner.invoke(app, ["dataset", "check", str(broken), "--json"])
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["ok"] is False and {p["code"] for p in report["problems"]} == {"file.missing", "count.frames"}


def test_check_json_ok(root):
    result = runner.invoke(app, ["dataset", "check", str(root), "--json"])
    assert result.exit_code == 0
    assert json.loads(result.output) == {"root": str(root), "ok": True, "problems": []}


def test_check_not_a_dataset(tmp_path):
    result = runner.invoke(app, ["dataset", "check", str(tmp_path)])
    assert result.exit_code == 1
    assert "[info] meta/info.json: not found" in result.output


def test_info_plain(root):
    result = runner.invoke(app, ["dataset", "info", str(root)])
    assert result.exit_code == 0, result.output
    out = result.output
    for line in ("fps: 15", "episodes: 2", "frames: 24", "duration: 1.6 s", "robot_type: probe_bot",
                 "  observation.state: float32 [4]", "  observation.images.front: video [32, 48, 3]",
                 "task 0: stack the cubes", "task 1: open the drawer"):
        assert line in out.splitlines(), line
    assert "video observation.images.front: codec=h264, pix_fmt=yuv420p, crf=23" in out
    assert "size on disk: " in out and "\x1b[" not in out  # no colour codes when not a terminal


def test_info_json(root):
    result = runner.invoke(app, ["dataset", "info", str(root), "--json"])
    assert result.exit_code == 0
    s = json.loads(result.output)
    assert (s["fps"], s["episodes"], s["frames"], s["tasks"]) == (15, 2, 24, ["stack the cubes", "open the drawer"])
    assert s["features"]["action"] == {"dtype": "float32", "shape": [4]}
    assert s["videos"]["observation.images.front"]["codec"] == "h264" and s["videos"]["observation.images.front"]["files"] == 1
    assert s["size_bytes"] == sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    assert s["duration_s"] == pytest.approx(24 / 15)


def test_info_on_missing_root_fails_cleanly(tmp_path):
    result = runner.invoke(app, ["dataset", "info", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "info.json: not found" in result.output


def test_merge_command(tmp_path):
    from tests.dataset.test_writer import write

    a = write(tmp_path / "a", n=2)
    b = write(tmp_path / "b", n=1)
    result = CliRunner().invoke(app, ["dataset", "merge", str(a), str(b), "--out", str(tmp_path / "m")])
    assert result.exit_code == 0, result.output
    assert "3 episodes" in result.output
    again = CliRunner().invoke(app, ["dataset", "merge", str(a), "--out", str(tmp_path / "m")])
    assert again.exit_code == 2 and "not empty" in again.output


def test_merge_reports_progress_off_a_terminal_and_not_when_quiet(tmp_path):
    from tests.dataset.test_writer import write

    a = write(tmp_path / "a", n=2)
    loud = CliRunner().invoke(app, ["dataset", "merge", str(a), str(a), "--out", str(tmp_path / "m1")])
    assert loud.exit_code == 0, loud.output
    assert "merge: 4/4 episodes" in loud.stderr and "took" in loud.stderr
    quiet = CliRunner().invoke(app, ["dataset", "merge", str(a), "--out", str(tmp_path / "m2"), "--quiet"])
    assert quiet.exit_code == 0, quiet.output
    assert "merge:" not in quiet.stderr
