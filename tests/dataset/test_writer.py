import hashlib
import json

import av
import numpy as np
import pyarrow.parquet as pq
import pytest

from demoforge.dataset import DatasetWriter, VideoSettings
from demoforge.dataset.assemble import column_to_numpy
from demoforge.errors import DatasetError, DatasetLockedError
from tests.dataset._synth import FEATURES, STATE_ONLY, episode


def write(root, n=3, features=FEATURES, **kwargs):
    with DatasetWriter.create(root, fps=30, features=features, robot_type="test_arm", **kwargs) as w:
        for e in range(n):
            w.add_episode(episode(e, 20 + e, features), task=f"task {e % 2}", extra={"seed": e})
    return root


def tree_digest(root):
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def decode(path):
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        return [(float(f.pts * s.time_base), f.to_ndarray(format="rgb24")) for f in c.decode(s)]


def test_layout_and_info(tmp_path):
    root = write(tmp_path / "ds")
    info = json.loads((root / "meta/info.json").read_text())
    assert info["codebase_version"] == "v3.0"
    assert info["total_episodes"] == 3 and info["total_frames"] == 20 + 21 + 22 and info["total_tasks"] == 2
    assert list(info["features"])[-5:] == ["timestamp", "frame_index", "episode_index", "index", "task_index"]
    vinfo = info["features"]["observation.images.front"]["info"]
    assert vinfo["video.codec"] == "h264" and vinfo["video.g"] == 8 and vinfo["video.crf"] == 23
    assert info["splits"] == {"train": "0:3"}
    assert not (root / ".demoforge-staging").exists()
    assert pq.ParquetFile(root / "data/chunk-000/file-000.parquet").metadata.num_row_groups == 3
    schema = pq.read_schema(root / "data/chunk-000/file-000.parquet")
    assert b"huggingface" in schema.metadata
    tasks = pq.read_table(root / "meta/tasks.parquet")
    assert tasks.column("task").to_pylist() == ["task 0", "task 1"]
    assert json.loads(tasks.schema.metadata[b"pandas"])["index_columns"] == ["task"]


def test_round_trip_values_and_frames(tmp_path):
    root = write(tmp_path / "ds")
    data = pq.read_table(root / "data/chunk-000/file-000.parquet")
    eps = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    frames = decode(root / "videos/observation.images.front/chunk-000/file-000.mp4")
    assert len(frames) == data.num_rows
    for e, row in enumerate(eps):
        want = episode(e, 20 + e)
        sl = slice(row["dataset_from_index"], row["dataset_to_index"])
        got = column_to_numpy(data.column("observation.state").combine_chunks())[sl]
        np.testing.assert_array_equal(got, want["observation.state"])
        ts = data.column("timestamp").to_numpy()[sl]
        np.testing.assert_array_equal(ts, (np.arange(20 + e) / 30).astype(np.float32))
        assert json.loads(row["demoforge/seed"]) == e
        span = [f for t, f in frames if row["videos/observation.images.front/from_timestamp"] - 1e-4 <= t
                < row["videos/observation.images.front/to_timestamp"] - 1e-4]
        assert len(span) == row["length"]
        err = np.abs(np.stack(span).astype(float) - want["observation.images.front"]).mean() / 255
        assert err <= 0.05


def test_stats_are_exact(tmp_path):
    root = write(tmp_path / "ds")
    stats = json.loads((root / "meta/stats.json").read_text())
    allstate = np.concatenate([episode(e, 20 + e)["observation.state"] for e in range(3)]).astype(np.float64)
    s = stats["observation.state"]
    np.testing.assert_allclose(s["mean"], allstate.mean(0), rtol=1e-12)
    np.testing.assert_allclose(s["std"], allstate.std(0), rtol=1e-12)
    np.testing.assert_allclose(s["q10"], np.quantile(allstate, 0.1, axis=0), rtol=1e-12)
    np.testing.assert_allclose(s["q99"], np.quantile(allstate, 0.99, axis=0), rtol=1e-12)
    assert s["count"] == [63]
    # camera stats come from the recorded (source) pixels: exact, per channel, scaled to [0, 1]
    px = np.concatenate([episode(e, 20 + e)["observation.images.front"] for e in range(3)]).reshape(-1, 3) / 255
    v = stats["observation.images.front"]
    np.testing.assert_allclose(np.array(v["mean"]).ravel(), px.mean(0), rtol=1e-12)
    np.testing.assert_allclose(np.array(v["q50"]).ravel(), np.quantile(px, 0.5, axis=0), rtol=1e-12)
    assert np.array(v["min"]).shape == (3, 1, 1)
    # per-episode stats in meta/episodes
    row = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()[1]
    np.testing.assert_allclose(row["stats/action/max"], episode(1, 21)["action"].max(0), rtol=1e-6)
    assert row["stats/frame_index/max"] == [20.0]


def test_same_input_gives_byte_identical_dataset(tmp_path):
    a = tree_digest(write(tmp_path / "a"))
    b = tree_digest(write(tmp_path / "b"))
    assert sorted(a) == sorted(b)
    assert [k for k in a if a[k] != b[k]] == []


def test_frame_by_frame_equals_whole_episode(tmp_path):
    a = write(tmp_path / "a")
    with DatasetWriter.create(tmp_path / "b", fps=30, features=FEATURES, robot_type="test_arm") as w:
        for e in range(3):
            cols = episode(e, 20 + e)
            for t in range(20 + e):
                w.add_frame({k: v[t] for k, v in cols.items()}, task=f"task {e % 2}")
            w.save_episode(extra={"seed": e})
    da, db = tree_digest(a), tree_digest(tmp_path / "b")
    assert [k for k in da if da[k] != db.get(k)] == []


def test_lerobot_default_av1_settings(tmp_path):
    root = write(tmp_path / "ds", n=2, video=VideoSettings.lerobot_default())
    info = json.loads((root / "meta/info.json").read_text())["features"]["observation.images.front"]["info"]
    assert (info["video.codec"], info["video.crf"], info["video.g"], info["video.preset"]) == ("av1", 30, 2, 12)
    with av.open(str(root / "videos/observation.images.front/chunk-000/file-000.mp4")) as c:
        assert c.streams.video[0].codec_context.name in ("libdav1d", "av1", "libaom-av1")
        assert sum(1 for _ in c.decode(video=0)) == 41


def test_gop_from_seconds():
    assert VideoSettings(gop_s=0.25).gop(60) == 15
    assert VideoSettings(gop_s=0.001).gop(30) == 1
    assert VideoSettings(g=4).gop(30) == 4


def test_video_duration_cap_starts_new_files(tmp_path):
    # 20-22 frames per episode at 30 fps; a 1.0 s cap fits one episode per file
    root = write(tmp_path / "ds", n=3, video_file_duration_s=1.0)
    eps = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    assert [r["videos/observation.images.front/file_index"] for r in eps] == [0, 1, 2]
    assert all(r["videos/observation.images.front/from_timestamp"] == 0.0 for r in eps)
    for r in eps:
        f = root / f"videos/observation.images.front/chunk-000/file-{r['videos/observation.images.front/file_index']:03d}.mp4"
        assert len(decode(f)) == r["length"]


def test_size_caps_and_chunks(tmp_path):
    root = write(tmp_path / "ds", n=5, features=STATE_ONLY, data_file_size_mb=1e-6, chunks_size=2)
    eps = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    assert [(r["data/chunk_index"], r["data/file_index"]) for r in eps] == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)]
    assert (root / "data/chunk-002/file-000.parquet").is_file()
    info = json.loads((root / "meta/info.json").read_text())
    assert info["video_path"] is None


def test_meta_files_and_extra(tmp_path):
    with DatasetWriter.create(tmp_path / "ds", fps=10, features=STATE_ONLY) as w:
        w.add_episode(episode(0, 5, STATE_ONLY), task="t", extra={"plan": ["pick a", "stack a b"]})
        w.write_meta_file("provenance.json", {"seed": 3})
    assert json.loads((tmp_path / "ds/meta/demoforge/provenance.json").read_text()) == {"seed": 3}


def test_finalize_is_idempotent_and_closes(tmp_path):
    w = DatasetWriter.create(tmp_path / "ds", fps=10, features=STATE_ONLY)
    w.add_episode(episode(0, 5, STATE_ONLY), task="t")
    w.finalize()
    digest = tree_digest(tmp_path / "ds")
    w.finalize()
    assert tree_digest(tmp_path / "ds") == digest
    with pytest.raises(DatasetError, match="finalized"):
        w.add_episode(episode(1, 5, STATE_ONLY), task="t")


def test_non_empty_root_is_refused(tmp_path):
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "notes.txt").write_text("x")
    with pytest.raises(DatasetError, match="not empty.*resume"):
        DatasetWriter.create(tmp_path / "ds", fps=10, features=STATE_ONLY)


def test_second_writer_gets_lock_error(tmp_path):
    w = DatasetWriter.create(tmp_path / "ds", fps=10, features=STATE_ONLY)
    w.add_episode(episode(0, 5, STATE_ONLY), task="t")
    with pytest.raises(DatasetLockedError, match="another writer"):
        DatasetWriter.resume(tmp_path / "ds")
    with pytest.raises(DatasetLockedError):
        DatasetWriter.create(tmp_path / "ds", fps=10, features=STATE_ONLY)
    w.finalize()


def test_a_create_killed_before_its_staging_was_whole_leaves_nothing_to_resume(tmp_path):
    """A run killed between a create's folders and its config: the next create starts afresh
    (a CI run once resumed such a shard and found no config)."""
    unborn = tmp_path / "ds" / ".demoforge-staging.new"
    (unborn / "data").mkdir(parents=True)  # what a create killed at that point leaves
    (unborn / "lock").touch()
    assert not (tmp_path / "ds" / ".demoforge-staging").exists()  # nothing a resume would pick up
    with DatasetWriter.create(tmp_path / "ds", fps=10, features=STATE_ONLY) as w:
        w.add_episode(episode(0, 5, STATE_ONLY), task="t")
    assert sorted(p.name for p in (tmp_path / "ds").iterdir()) == ["data", "meta"]


def test_a_create_in_progress_is_not_swept_away(tmp_path):
    import fcntl
    import os
    unborn = tmp_path / "ds" / ".demoforge-staging.new"
    unborn.mkdir(parents=True)
    fd = os.open(unborn / "lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another process is creating right now
    try:
        with pytest.raises(DatasetLockedError):
            DatasetWriter.create(tmp_path / "ds", fps=10, features=STATE_ONLY)
        assert unborn.is_dir()
    finally:
        os.close(fd)


def test_exception_inside_with_keeps_finished_episodes(tmp_path):
    with pytest.raises(RuntimeError):
        with DatasetWriter.create(tmp_path / "ds", fps=10, features=STATE_ONLY) as w:
            w.add_episode(episode(0, 5, STATE_ONLY), task="t")
            raise RuntimeError("boom")
    with DatasetWriter.resume(tmp_path / "ds") as w:
        assert w.num_episodes == 1
        w.add_episode(episode(1, 5, STATE_ONLY), task="t")
    assert json.loads((tmp_path / "ds/meta/info.json").read_text())["total_episodes"] == 2


def test_resume_of_finalized_root_is_refused(tmp_path):
    root = write(tmp_path / "ds", n=1, features=STATE_ONLY)
    with pytest.raises(DatasetError, match="already finalized"):
        DatasetWriter.resume(root)


def test_video_bytes_do_not_depend_on_cpu_load(tmp_path):
    """Encoder threads made x264 output vary under load; segments must not."""
    import threading

    from demoforge.dataset.video import SegmentEncoder

    frames = episode(0, 20)["observation.images.front"]
    stop = threading.Event()

    def burn():
        while not stop.is_set():
            np.linalg.svd(np.random.default_rng(0).random((200, 200)))

    burners = [threading.Thread(target=burn) for _ in range(2)]
    for b in burners:
        b.start()
    try:
        digests = set()
        for i in range(15):
            enc = SegmentEncoder(tmp_path / f"{i}.mp4", settings=VideoSettings(), fps=30, height=32, width=48)
            for f in frames:
                enc.add(f)
            enc.close()
            digests.add(hashlib.sha256((tmp_path / f"{i}.mp4").read_bytes()).hexdigest())
    finally:
        stop.set()
        for b in burners:
            b.join()
    assert len(digests) == 1


def test_episode_extras_survive_a_resume(tmp_path):
    w = DatasetWriter.create(tmp_path / "ds", fps=10, features=STATE_ONLY)
    w.add_episode(episode(0, 5, STATE_ONLY), task="t", extra={"failure": {"kind": "ik"}})
    w.add_episode(episode(1, 5, STATE_ONLY), task="t", extra={"seed": 1})
    w.__exit__(RuntimeError, None, None)  # interrupted: staging kept
    r = DatasetWriter.resume(tmp_path / "ds")
    assert list(r.episode_extras()) == [{"failure": {"kind": "ik"}}, {"seed": 1}]
    r.finalize()


def test_data_written_as_added_gives_the_same_bytes(tmp_path):
    """create(data_as_added=True) writes each data file while episodes arrive (several files
    here: a small size cap); the dataset is byte for byte the one finalize would copy."""
    roots = []
    for eager in (False, True):
        root = tmp_path / f"eager-{eager}"
        with DatasetWriter.create(root, fps=30, features=STATE_ONLY, data_file_size_mb=0.002,
                                  data_as_added=eager) as w:
            for e in range(6):
                w.add_episode(episode(e, 20 + e, STATE_ONLY), task=f"t{e % 2}")
        roots.append(root)
    files = [{p.relative_to(r).as_posix(): p.read_bytes() for p in sorted(r.rglob("*")) if p.is_file()} for r in roots]
    assert len([k for k in files[0] if k.startswith("data/")]) > 1
    assert files[0] == files[1]


def test_data_written_as_added_leaves_no_file_on_error(tmp_path):
    with pytest.raises(RuntimeError):
        with DatasetWriter.create(tmp_path / "d", fps=30, features=STATE_ONLY, data_as_added=True) as w:
            w.add_episode(episode(0, 20, STATE_ONLY), task="t")
            raise RuntimeError("stop")
    assert not list((tmp_path / "d").glob("data/**/*.parquet*"))
