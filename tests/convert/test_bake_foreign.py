"""Baking data demoforge did not make: the recorded action, extra columns and robot_type are
kept or their loss is said aloud, never dropped without a word."""

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.convert import BakeConfig, BakeError, bake
from demoforge.dataset import DatasetWriter, Feature, open_dataset
from tests.convert._sources import write_raw

from tests.lerobot_fixtures import FIXTURES
LEAD = 0.05  # recorded action - state [rad]: the teleoperator's command leads the arm
STATE_NAMES = [f"joint{k}" for k in range(6)] + ["gripper"]
REPLACED = ("joint_pos rebuilds the action from the next observed state; the source's recorded `action` is not "
            "used; use --control-space as_recorded to keep it")


def write_foreign(root: Path, lengths=(10, 8), *, robot_type: str | None = "so100", fps: int = 30) -> Path:
    """A lerobot-layout dataset as a real robot's recorder writes it: no demoforge meta, an action
    leading the state by LEAD, a reward and a done flag per tick."""
    features = {
        "observation.state": Feature("float32", (7,), STATE_NAMES),
        "action": Feature("float32", (7,), [f"{n}.pos" for n in STATE_NAMES]),
        "next.reward": Feature("float32", (1,)),
        "next.done": Feature("bool", (1,)),
    }
    with DatasetWriter.create(root, fps=fps, features=features, robot_type=robot_type) as w:
        for e, n in enumerate(lengths):
            t = np.arange(n, dtype=np.float64)[:, None]
            state = (np.arange(1, 8) * t / 64 + e / 8).astype(np.float32)
            done = np.zeros((n, 1), bool)
            done[-1] = True
            w.add_episode({"observation.state": state, "action": state + np.float32(LEAD),
                           "next.reward": (t / n).astype(np.float32), "next.done": done}, task="pick the cube")
    return root


def stamp(root: Path) -> dict:
    return json.loads((root / "meta/bake.json").read_text())


@pytest.fixture(scope="module")
def foreign(tmp_path_factory):
    return write_foreign(tmp_path_factory.mktemp("foreign") / "src")


def test_a_convention_that_replaces_the_recorded_action_says_so(foreign, tmp_path):
    out = bake([foreign], tmp_path / "pos", BakeConfig(control_space="joint_pos"))
    got = open_dataset(out).read_episode(0)
    # the rebuilt action is the next observed state, not the recorded lead
    np.testing.assert_array_equal(got["action"][:-1], got["observation.state"][1:])
    notes = stamp(out)["notes"]
    assert REPLACED in notes
    assert any("['next.reward', 'next.done'] are not carried" in n and "--keep all" in n for n in notes)
    vel = stamp(bake([foreign], tmp_path / "vel", BakeConfig(control_space="joint_vel")))["notes"]
    assert any(n.startswith("joint_vel rebuilds the action") and "as_recorded" in n for n in vel)


def test_as_recorded_keeps_the_source_action_resampled_like_the_other_columns(foreign, tmp_path):
    src = open_dataset(foreign).read_episode(0)
    out = bake([foreign], tmp_path / "rec", BakeConfig(control_space="as_recorded", control_freq=15))
    ds = open_dataset(out)
    got = ds.read_episode(0)
    np.testing.assert_array_equal(got["action"], src["action"][::2])
    np.testing.assert_array_equal(got["observation.state"], src["observation.state"][::2])
    np.testing.assert_allclose(got["action"] - got["observation.state"], LEAD, atol=1e-6)
    assert ds.info.features["action"].names == [f"{n}.pos" for n in STATE_NAMES]
    s = stamp(out)
    assert s["convention"] == "as_recorded" and s["action"]["parts"] == {"recorded": [0, 7]}
    assert not any("rebuilds" in n for n in s["notes"])
    assert any("one tick in 2 (30 -> 15 Hz)" in n for n in s["notes"])  # deltas would lose motion between samples
    modality = json.loads((out / "meta/modality.json").read_text())
    assert modality["action"] == {"recorded": {"start": 0, "end": 7, "original_key": "action"}}
    at_native = stamp(bake([foreign], tmp_path / "native", BakeConfig(control_space="as_recorded")))["notes"]
    assert not any("one tick in" in n for n in at_native)


def test_keep_all_carries_every_column_the_bake_does_not_write(foreign, tmp_path):
    src = open_dataset(foreign).read_episode(1)
    out = bake([foreign], tmp_path / "all", BakeConfig(control_space="joint_pos", control_freq=15, keep=("all",)))
    got = open_dataset(out).read_episode(1)
    np.testing.assert_array_equal(got["next.reward"], src["next.reward"][::2])
    np.testing.assert_array_equal(got["next.done"], src["next.done"][::2])
    s = stamp(out)
    assert s["kept"] == ["next.reward", "next.done"] and s["config"]["keep"] == ["all"]
    assert not any("not carried" in n for n in s["notes"])
    one = stamp(bake([foreign], tmp_path / "one", BakeConfig(control_space="joint_pos", keep=("next.reward",))))
    assert any("['next.done'] are not carried" in n for n in one["notes"])
    with pytest.raises(BakeError, match="pass it alone"):
        bake([foreign], tmp_path / "mixed", BakeConfig(control_space="joint_pos", keep=("all", "next.reward")))


def test_keep_all_on_a_baked_dataset_carries_its_raw_command(tmp_path):
    # A baked dataset is read as plain LeRobot data: its raw_command is a column like any other,
    # which --keep all carries (it used to fail: "episode 0 has no raw_command").
    baked = bake([write_raw(tmp_path / "raw")], tmp_path / "baked", BakeConfig(control_space="joint_target"))
    again = bake([baked], tmp_path / "again", BakeConfig(control_space="as_recorded", keep=("all",)))
    for k in open_dataset(baked).episode_indices:
        src, got = open_dataset(baked).read_episode(k), open_dataset(again).read_episode(k)
        np.testing.assert_array_equal(got["raw_command"], src["raw_command"])
        np.testing.assert_array_equal(got["action"], src["action"])


def test_robot_type_comes_from_the_source_and_a_pool_holds_one_robot(foreign, tmp_path):
    out = bake([foreign], tmp_path / "a", BakeConfig(control_space="joint_pos"))
    assert open_dataset(out).info.robot_type == "so100"
    assert not any("robot_type" in n for n in stamp(out)["notes"])
    unnamed = write_foreign(tmp_path / "unnamed", robot_type=None)
    out = bake([unnamed], tmp_path / "b", BakeConfig(control_space="joint_pos"))
    assert open_dataset(out).info.robot_type is None
    assert any("names no robot" in n for n in stamp(out)["notes"])
    pooled = bake([unnamed, foreign], tmp_path / "pooled", BakeConfig(control_space="joint_pos"))
    assert open_dataset(pooled).info.robot_type == "so100"
    assert any(f"'so100' is taken from the other sources for ['{unnamed}']" in n for n in stamp(pooled)["notes"])
    other = write_foreign(tmp_path / "koch", robot_type="koch")
    with pytest.raises(BakeError, match="robot_type differs: .*'so100', .*'koch'"):
        bake([foreign, other], tmp_path / "c", BakeConfig(control_space="joint_pos"))


def test_raw_demoforge_sources_keep_their_targets_as_recorded_and_all_their_columns(tmp_path):
    raw = write_raw(tmp_path / "raw", lengths=(8,), cams=())
    target = open_dataset(bake([raw], tmp_path / "t", BakeConfig(control_space="joint_target"))).read_episode(0)
    out = bake([raw], tmp_path / "r", BakeConfig(control_space="as_recorded", keep=("all",)))
    got = open_dataset(out).read_episode(0)
    np.testing.assert_array_equal(got["action"], target["action"])  # the raw action is the commanded target
    src = open_dataset(raw).read_episode(0)
    for key in ("sim.state", "symbolic.state", "plan.operator", "plan.phase"):
        np.testing.assert_array_equal(got[key], src[key])
    s = stamp(out)
    assert s["action"]["parts"] == {"arm": [0, 3], "gripper": [3, 4]} and s["notes"] == []
    assert open_dataset(out).info.robot_type == "test_arm"
    dropped = stamp(bake([raw], tmp_path / "p", BakeConfig(control_space="joint_pos")))["notes"]
    assert dropped == ["source columns ['sim.state', 'symbolic.state', 'plan.operator', 'plan.phase'] are not "
                       "carried into the bake; --keep all (or --keep sim.state,symbolic.state,plan.operator,"
                       "plan.phase) carries them"]


def test_lerobot_written_fixtures_keep_their_action_and_robot_type(tmp_path):
    fixture = FIXTURES / "lerobot044_video"
    src = open_dataset(fixture)
    out = bake([fixture], tmp_path / "rec", BakeConfig(control_space="as_recorded", control_freq=15))
    ds = open_dataset(out)
    for e in range(src.num_episodes):
        np.testing.assert_array_equal(ds.read_episode(e)["action"], src.read_episode(e, ["action"])["action"][::2])
    assert ds.info.robot_type == "probe_bot" and ds.info.features["action"].names == [f"a{k}" for k in range(8)]
    assert len(ds.read_video(0, "observation.images.front")) == ds.episode(0)["length"]
    out = bake([fixture], tmp_path / "pos", BakeConfig(control_space="joint_pos"))
    assert REPLACED in stamp(out)["notes"]


def test_cli_prints_the_notes_and_reports_a_bad_keep_with_exit_2(foreign, tmp_path):
    runner = CliRunner()
    res = runner.invoke(app, ["bake", str(foreign), "--control-space", "joint_pos", "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    assert f"note: {REPLACED}" in res.output and "note: source columns ['next.reward', 'next.done']" in res.output
    res = runner.invoke(app, ["bake", str(foreign), "--control-space", "as_recorded", "--keep", "all",
                              "--out", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    assert "note:" not in res.output
    res = runner.invoke(app, ["bake", str(foreign), "--control-space", "joint_pos", "--keep", "next.rewrd",
                              "--out", str(tmp_path / "c")])
    assert res.exit_code == 2 and "next.rewrd" in res.output and "next.reward" in res.output
    assert "Traceback" not in res.output and not (tmp_path / "c").exists()


def test_a_video_that_must_be_re_encoded_is_said_so_with_both_settings(tmp_path):
    """A lerobot-written AV1 stream baked at its own rate with --vcodec h264 (not the default auto) is
    re-encoded, and the note names both encoders and the flags that copy it instead; with those
    flags it is copied, with no note."""
    fixture = FIXTURES / "lerobot061_video"
    notes = stamp(bake([fixture], tmp_path / "h264", BakeConfig(control_space="as_recorded", vcodec="h264")))["notes"]
    (note,) = [n for n in notes if n.startswith("observation.images.front: re-encoded")]
    assert "from av1 crf 30" in note and "to h264 crf 23" in note
    assert "`--vcodec av1 --crf 30 --gop-seconds 0.0666667` copies" in note
    res = CliRunner().invoke(app, ["bake", str(fixture), "--control-space", "as_recorded", "--vcodec", "av1", "--crf",
                                   "30", "--gop-seconds", "0.0666667", "--out", str(tmp_path / "copy")])
    assert res.exit_code == 0, res.output
    copy = stamp(tmp_path / "copy")
    assert not any("re-encoded" in n for n in copy["notes"])
    assert {e["video"]["observation.images.front"] for e in copy["sources"][0]["episodes"]} == {"copied"}
    half = stamp(bake([fixture], tmp_path / "half", BakeConfig(control_space="as_recorded", control_freq=15,
                                                                                vcodec="h264")))["notes"]
    assert any("one frame in 2 is kept (30 -> 15 Hz)" in n for n in half)
    old = stamp(bake([FIXTURES / "lerobot044_video"], tmp_path / "old", BakeConfig(control_space="as_recorded",
                                                                                                vcodec="h264")))
    assert any("does not record all its encoder settings" in n for n in old["notes"])


def test_the_default_vcodec_auto_copies_a_stream_kept_whole_and_says_so(tmp_path):
    """`--vcodec auto` (the default): a lerobot-written AV1 stream baked at its own rate is copied
    packet for packet with its own settings in info.json, and the note says so; sub-sampled, it is
    re-encoded in h264 with a note naming both settings."""
    import json

    from demoforge.dataset import open_dataset

    fixture = FIXTURES / "lerobot061_video"
    res = CliRunner().invoke(app, ["bake", str(fixture), "--control-space", "as_recorded", "--out",
                                   str(tmp_path / "auto")])
    assert res.exit_code == 0, res.output
    auto = stamp(tmp_path / "auto")
    assert {e["video"]["observation.images.front"] for e in auto["sources"][0]["episodes"]} == {"copied"}
    (note,) = [n for n in auto["notes"] if n.startswith("observation.images.front:")]
    assert "copied packet for packet" in note and "av1 crf 30" in note, note
    assert "copied packet for packet" in res.output
    src = json.loads((fixture / "meta/info.json").read_text())["features"]["observation.images.front"]["info"]
    out = open_dataset(tmp_path / "auto").info.features["observation.images.front"].info
    assert {k: out[k] for k in ("video.codec", "video.crf", "video.g", "video.pix_fmt")} == \
        {k: src[k] for k in ("video.codec", "video.crf", "video.g", "video.pix_fmt")}
    res = CliRunner().invoke(app, ["bake", str(fixture), "--control-space", "as_recorded", "--control-freq", "15",
                                   "--out", str(tmp_path / "half")])
    assert res.exit_code == 0, res.output
    (note,) = [n for n in stamp(tmp_path / "half")["notes"] if n.startswith("observation.images.front:")]
    assert "re-encoded, since one frame in 2 is kept" in note and "from av1 crf 30" in note and "to h264 crf 23" in note
