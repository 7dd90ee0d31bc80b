import hashlib
import json

import av
import numpy as np
import pytest

from demoforge.convert import BakeConfig, BakeError, bake, read_episode
from demoforge.dataset import VideoSettings, check_dataset, open_dataset
from demoforge.sim import ControlLaw
from tests.convert._sources import CAMS, JOINTS, OFFSET, SQUEEZE, frame_level, law, motion, write_raw

from tests.lerobot_fixtures import FIXTURES


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    return write_raw(tmp_path_factory.mktemp("raw") / "raw", lengths=(12, 9))


def _tree(root):
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _packets(path, t0, t1):
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        return [bytes(p) for p in c.demux(s) if p.pts is not None and t0 - 1e-4 <= float(p.pts * s.time_base) < t1 - 1e-4]


def test_joint_vel_at_15hz_decimates_data_and_video(raw, tmp_path):
    out = bake([raw], tmp_path / "out", BakeConfig(control_space="joint_vel", control_freq=15))
    ds = open_dataset(out)
    assert ds.info.fps == 15 and ds.num_episodes == 2
    assert ds.info.features["action"].names == ds.info.features["raw_command"].names == [*JOINTS, "gripper"]
    cols = ds.read_episode(0)
    m = motion(12)
    np.testing.assert_array_equal(cols["observation.state"],
                                  np.column_stack([m["q"], m["gripper"]])[[0, 4, 8]].astype(np.float32))
    v = (m["q"][[4, 8, 8]] - m["q"][[0, 4, 8]]) * 15
    np.testing.assert_allclose(cols["action"][:, :3], v, atol=1e-6)
    np.testing.assert_array_equal(cols["raw_command"][:, 3], np.full(3, SQUEEZE, np.float32))
    for key in CAMS:
        frames = ds.read_video(1, key)
        levels = frames.reshape(len(frames), -1).mean(axis=1)
        np.testing.assert_allclose(levels, [frame_level(k) for k in (0, 4, 8)], atol=3)
    stamp = json.loads((out / "meta/bake.json").read_text())
    assert all(v == "encoded" for e in stamp["sources"][0]["episodes"] for v in e["video"].values())


def test_bake_json_and_modality_json(raw, tmp_path):
    out = bake([raw], tmp_path / "out", BakeConfig(control_space="joint_target", control_freq=30))
    stamp = json.loads((out / "meta/bake.json").read_text())
    assert stamp["convention"] == "joint_target" and stamp["control_freq"] == 30 and stamp["native_freq"] == 60
    assert stamp["state"] == {"names": [*JOINTS, "gripper"], "parts": {"arm": [0, 3], "gripper": [3, 4]}}
    assert stamp["action"]["parts"] == {"arm": [0, 3], "gripper": [3, 4]}
    assert stamp["gripper"]["quantity"] == "closedness"
    assert stamp["control_law"] == json.loads(law().to_json())
    eps = stamp["sources"][0]["episodes"]
    assert [(e["source_episode"], e["baked_episode"], e["ticks_in"], e["ticks_out"]) for e in eps] == [
        (0, 0, 12, 6), (1, 1, 9, 5)]
    assert all(len(e["sha256"]) == 64 for e in eps) and eps[0]["sha256"] != eps[1]["sha256"]
    assert eps[0]["sha256"] == read_episode(open_dataset(raw), 0).sha256
    assert stamp["demoforge"]["version"] and "commit" in stamp["demoforge"]
    assert stamp["video"]["encoder"] == "libx264" and stamp["video"]["settings"]["crf"] == 23
    modality = json.loads((out / "meta/modality.json").read_text())
    assert modality == {
        "state": {"arm": {"start": 0, "end": 3, "original_key": "observation.state"},
                  "gripper": {"start": 3, "end": 4, "original_key": "observation.state"}},
        "action": {"arm": {"start": 0, "end": 3, "original_key": "action"},
                   "gripper": {"start": 3, "end": 4, "original_key": "action"}},
        "video": {"front": {"original_key": CAMS[0]}, "wrist": {"original_key": CAMS[1]}},
        "annotation": {"human.task_description": {"original_key": "task_index"}},
    }
    cols = open_dataset(out).read_episode(0)
    np.testing.assert_array_equal(cols["action"][:, :3], (motion(12)["q"][::2] + OFFSET).astype(np.float32))
    extra = open_dataset(out).episode(0)
    assert json.loads(extra["demoforge/bake_source"])["episode_index"] == 0
    assert json.loads(extra["demoforge/outcome"]) == "success"


def test_remux_path_copies_packets_without_reencoding(raw, tmp_path):
    out = bake([raw], tmp_path / "out", BakeConfig(control_space="joint_pos", cams=("front",)))
    src, dst = open_dataset(raw), open_dataset(out)
    assert dst.info.video_keys == [CAMS[0]]
    stamp = json.loads((out / "meta/bake.json").read_text())
    assert [e["video"] for e in stamp["sources"][0]["episodes"]] == [{CAMS[0]: "copied"}] * 2
    for i in (0, 1):
        a, b = src.episode(i), dst.episode(i)
        key = CAMS[0]
        pa = _packets(src.video_path(i, key), a[f"videos/{key}/from_timestamp"], a[f"videos/{key}/to_timestamp"])
        pb = _packets(dst.video_path(i, key), b[f"videos/{key}/from_timestamp"], b[f"videos/{key}/to_timestamp"])
        assert len(pa) == src.episode(i)["length"] and pa == pb


def test_other_encoder_settings_reencode_at_native_rate(raw, tmp_path):
    out = bake([raw], tmp_path / "out", BakeConfig(control_space="joint_pos", cams=("front",),
                                                   vcodec="h264", crf=30))
    stamp = json.loads((out / "meta/bake.json").read_text())
    assert stamp["sources"][0]["episodes"][0]["video"] == {CAMS[0]: "encoded"}
    assert open_dataset(out).info.features[CAMS[0]].info["video.crf"] == 30


def test_workers_1_and_2_are_byte_identical(tmp_path):
    src = write_raw(tmp_path / "raw", lengths=(8, 6, 7))
    cfg = dict(control_space="joint_vel", control_freq=30)
    one = bake([src], tmp_path / "one", BakeConfig(**cfg, workers=1))
    two = bake([src], tmp_path / "two", BakeConfig(**cfg, workers=2))
    assert _tree(one) == _tree(two)
    assert not list(tmp_path.glob(".*bake-*"))  # shards and temporaries removed


def test_a_shard_reports_each_episode_it_bakes(raw, tmp_path):
    from demoforge.convert.bake import write_shard
    from demoforge.convert.plan import make_plan

    plan, _ = make_plan([raw], BakeConfig(control_space="joint_vel", control_freq=15))
    events = []
    write_shard(plan, 0, 2, tmp_path / "shard", events.append)
    assert [(e.stage, e.kind, e.item, e.done, e.total) for e in events] == [
        ("bake", "episode", "source 0 episode 0", 1, 2), ("bake", "episode", "source 0 episode 1", 2, 2)]


def test_mixed_control_laws_are_refused(raw, tmp_path):
    other = write_raw(tmp_path / "other", lengths=(6,), control=law(kp=200.0))
    with pytest.raises(BakeError, match="mixed presets"):
        bake([raw, other], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_pool_of_same_law_sources_bakes_in_order(raw, tmp_path):
    other = write_raw(tmp_path / "other", lengths=(6,), cams=CAMS)
    ds = open_dataset(bake([raw, other], tmp_path / "out", BakeConfig(control_space="joint_pos")))
    assert [ds.episode(i)["length"] for i in range(3)] == [12, 9, 6]


def test_failures_only_when_asked(tmp_path):
    src = write_raw(tmp_path / "raw", lengths=(6, 7), outcomes=["failure", "success"], cams=())
    assert open_dataset(bake([src], tmp_path / "a")).num_episodes == 1
    ds = open_dataset(bake([src], tmp_path / "b", BakeConfig(include_failures=True)))
    assert [ds.episode(i)["length"] for i in range(2)] == [6, 7]


def test_torque_law_refuses_joint_target_but_bakes_joint_vel(tmp_path):
    src = write_raw(tmp_path / "raw", lengths=(6,), cams=(),
                    control=ControlLaw(mode="joint_torque", kp=(0.0,) * 3, kd=(0.0,) * 3))
    with pytest.raises(BakeError, match="torque"):
        bake([src], tmp_path / "a")
    assert open_dataset(bake([src], tmp_path / "b", BakeConfig(control_space="joint_vel"))).num_frames == 6


def test_bad_rate_and_non_empty_output_are_refused(raw, tmp_path):
    with pytest.raises(BakeError, match=r"valid rates are \[60, 30, 20, 15, 12, 10"):
        bake([raw], tmp_path / "a", BakeConfig(control_freq=25))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x").write_text("x")
    with pytest.raises(BakeError, match="not empty"):
        bake([raw], tmp_path / "b")
    with pytest.raises(BakeError, match="cameras .*not found.*front"):
        bake([raw], tmp_path / "c", BakeConfig(cams=("top",)))


class ObjectColumns:
    """`convert.seams.EpisodeModels` for a synthetic sim.state [time, q, object (x, y)]: no model to
    rebuild, so it names the object columns."""

    def object_qpos_columns(self, root, episode):
        return [4, 5]

    def environment_state(self, root, record, sim_state, kind):
        raise AssertionError("not asked for")


def test_filter_idle_drops_dead_ticks_and_their_frames(tmp_path):
    from demoforge.dataset import DatasetWriter
    from demoforge.raw import schema
    from tests.convert._sources import N_STATE, raw_columns

    cols = raw_columns(12, cams=CAMS[:1])
    for key in (schema.STATE, schema.ACTION, schema.RAW_COMMAND):
        cols[key][4:10] = cols[schema.STATE][4]  # robot holds tick 4's pose, command == achieved
    cols[schema.SIM_STATE][4:10, 1:] = cols[schema.SIM_STATE][4, 1:]
    features = schema.raw_features(n_arm=3, n_command=3, n_state=N_STATE, atoms=["(on a b)"], joint_names=JOINTS)
    from demoforge.dataset import Feature
    features[CAMS[0]] = Feature("video", cols[CAMS[0]].shape[1:])
    with DatasetWriter.create(tmp_path / "raw", fps=60, features=features) as w:
        w.add_episode(cols, task="t", extra={"outcome": "success"})
        w.write_meta_file(schema.CONTROLLER_META, law().to_json())
    out = bake([tmp_path / "raw"], tmp_path / "out", BakeConfig(control_space="joint_pos", filter_idle=True),
               models=ObjectColumns())
    ds = open_dataset(out)
    kept = [0, 1, 2, 3, 4, 9, 10, 11]
    np.testing.assert_array_equal(ds.read_episode(0)["observation.state"], cols[schema.STATE][kept])
    levels = ds.read_video(0, CAMS[0]).reshape(len(kept), -1).mean(axis=1)
    np.testing.assert_allclose(levels, [frame_level(k) for k in kept], atol=3)
    assert json.loads((out / "meta/bake.json").read_text())["sources"][0]["episodes"][0]["idle_dropped"] == 4


def test_v21_layout(raw, tmp_path):
    out = bake([raw], tmp_path / "out", BakeConfig(control_space="joint_pos", control_freq=30, lerobot_format="v2.1"))
    info = json.loads((out / "meta/info.json").read_text())
    assert info["codebase_version"] == "v2.1" and info["total_chunks"] == 1 and info["total_videos"] == 4
    assert (out / "data/chunk-000/episode_000001.parquet").is_file()
    assert (out / f"videos/chunk-000/{CAMS[1]}/episode_000000.mp4").is_file()
    episodes = [json.loads(line) for line in (out / "meta/episodes.jsonl").read_text().splitlines()]
    assert episodes == [{"episode_index": 0, "tasks": ["stack 0"], "length": 6},
                        {"episode_index": 1, "tasks": ["stack 1"], "length": 5}]
    tasks = [json.loads(line) for line in (out / "meta/tasks.jsonl").read_text().splitlines()]
    assert tasks == [{"task_index": 0, "task": "stack 0"}, {"task_index": 1, "task": "stack 1"}]
    stats = [json.loads(line) for line in (out / "meta/episodes_stats.jsonl").read_text().splitlines()]
    assert stats[1]["stats"]["observation.state"]["count"] == [5]
    assert (out / "meta/bake.json").is_file() and (out / "meta/modality.json").is_file()
    with av.open(str(out / f"videos/chunk-000/{CAMS[0]}/episode_000001.mp4")) as c:
        assert sum(1 for _ in c.decode(video=0)) == 5
    assert check_dataset(out) == []  # checked as v2.1: its own layout, not v3.0's
    from typer.testing import CliRunner

    from demoforge.cli.main import app

    cli = CliRunner().invoke(app, ["dataset", "check", str(out)])  # the command too, not only the library
    assert cli.exit_code == 0 and "OK" in cli.output and "LeRobot v2.1, 2 episodes, 11 frames" in cli.output, cli.output
    from demoforge.doctor import run_doctor

    doctor = run_doctor(out)
    assert not doctor.failed("warning")
    assert [(f.code, f.severity) for f in doctor.findings] == [("D001", "info")]
    assert "v2.1" in doctor.findings[0].message and "--lerobot-format v3.0" in doctor.findings[0].fix


def test_a_broken_v21_dataset_is_reported_as_v21(raw, tmp_path):
    out = bake([raw], tmp_path / "out", BakeConfig(control_space="joint_pos", control_freq=30, lerobot_format="v2.1"))
    (out / f"videos/chunk-000/{CAMS[1]}/episode_000001.mp4").unlink()
    lines = (out / "meta/episodes.jsonl").read_text().splitlines()
    (out / "meta/episodes.jsonl").write_text(lines[0].replace('"length": 6', '"length": 7') + "\n" + lines[1] + "\n")
    found = {(p.code, p.file) for p in check_dataset(out)}
    assert ("file.missing", f"videos/chunk-000/{CAMS[1]}/episode_000001.mp4") in found
    assert ("count.frames", "data/chunk-000/episode_000000.parquet") in found  # 6 rows, the jsonl says 7
    assert ("count.frames", "meta/info.json") in found  # total_frames 11, lengths sum to 12
    assert not any("codebase_version" in p.message for p in check_dataset(out))


def test_lerobot_written_fixtures_bake_with_the_conventions_their_columns_allow(tmp_path):
    fixture = FIXTURES / "lerobot061_video"
    src = open_dataset(fixture)
    out = bake([fixture], tmp_path / "vel", BakeConfig(control_space="joint_vel", control_freq=15))
    ds = open_dataset(out)
    state = src.read_episode(0, ["observation.state"])["observation.state"].astype(np.float64)
    got = ds.read_episode(0)
    np.testing.assert_array_equal(got["observation.state"], state[::2].astype(np.float32))
    np.testing.assert_allclose(got["action"][:-1, :7], (state[2::2, :7] - state[:-2:2, :7]) * 15, rtol=1e-5, atol=1e-5)
    assert ds.info.fps == 15 and ds.num_episodes == src.num_episodes and "raw_command" not in ds.info.features
    assert len(ds.read_video(0, "observation.images.front")) == len(got["action"])
    assert json.loads((out / "meta/bake.json").read_text())["control_law"] is None
    for convention in ("joint_target", "raw_cmd"):
        with pytest.raises(BakeError, match="joint_pos or joint_vel"):
            bake([fixture], tmp_path / convention, BakeConfig(control_space=convention))
    with pytest.raises(BakeError, match="without --filter-idle"):
        bake([fixture], tmp_path / "idle", BakeConfig(control_space="joint_pos", filter_idle=True))
    state_only = FIXTURES / "lerobot061_state_only"
    assert open_dataset(bake([state_only], tmp_path / "so", BakeConfig(control_space="joint_pos"))).num_episodes >= 1


def test_a_generate_run_folder_stands_for_its_splits(tmp_path):
    run = tmp_path / "run"
    write_raw(run / "success", lengths=(6,), cams=())
    write_raw(run / "failure", lengths=(5,), outcomes=["failure"], cams=())
    assert open_dataset(bake([run], tmp_path / "a")).num_frames == 6
    assert open_dataset(bake([run], tmp_path / "b", BakeConfig(include_failures=True))).num_frames == 11


def test_final_probe_fails_a_bake_with_an_overlong_video_file(raw, tmp_path, monkeypatch):
    import sys

    bake_module = sys.modules["demoforge.convert.bake"]  # the package exports the function under that name
    monkeypatch.setattr(bake_module, "MAX_VIDEO_FILE_S", 0.1)  # the 9-tick episode at 60 Hz ends at 0.13 s
    with pytest.raises(BakeError, match="over 0 s"):
        bake([raw], tmp_path / "out", BakeConfig(control_space="joint_pos", max_video_file_seconds=0.05))
    assert not (tmp_path / "out").exists()
    monkeypatch.undo()
    with pytest.raises(BakeError, match="--max-video-file-seconds 1200"):
        bake([raw], tmp_path / "out", BakeConfig(max_video_file_seconds=1200))


def test_a_preset_counts_for_remux_only_when_asked_for(tmp_path):
    src = write_raw(tmp_path / "raw", lengths=(6,), cams=CAMS[:1], video=VideoSettings(preset="veryfast"))
    how = {}
    for name, preset in (("default", None), ("same", "veryfast"), ("other", "medium")):
        out = bake([src], tmp_path / name, BakeConfig(control_space="joint_pos", vcodec="h264", preset=preset))
        how[name] = json.loads((out / "meta/bake.json").read_text())["sources"][0]["episodes"][0]["video"][CAMS[0]]
    assert how == {"default": "copied", "same": "copied", "other": "encoded"}
