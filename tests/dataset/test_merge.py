import json

import av
import numpy as np
import pyarrow.parquet as pq
import pytest


from demoforge.dataset import DatasetWriter, Feature
from demoforge.dataset.merge import merge_datasets
from demoforge.dataset.reader import open_dataset
from demoforge.errors import DatasetError
from tests.dataset._synth import STATE_ONLY, episode
from tests.dataset.test_writer import write

from tests.lerobot_fixtures import FIXTURES


def packets(path):
    with av.open(str(path)) as c:
        return [bytes(p) for p in c.demux(video=0) if p.size]


def test_merge_reindexes_and_copies_video_packets(tmp_path):
    a = write(tmp_path / "a", n=2)
    b = write(tmp_path / "b", n=3)
    info = merge_datasets([a, b], tmp_path / "m")
    assert (info.total_episodes, info.total_frames, info.total_tasks) == (5, 41 + 63, 2)
    m = open_dataset(tmp_path / "m")
    # frames and episodes re-indexed contiguously
    for new, (src, i) in enumerate([(a, 0), (a, 1), (b, 0), (b, 1), (b, 2)]):
        got = m.read_episode(new)
        want = open_dataset(src).read_episode(i)
        np.testing.assert_array_equal(got["observation.state"], want["observation.state"])
        assert got["episode_index"].tolist() == [new] * len(got["index"])
        assert m.episode(new)["tasks"] == open_dataset(src).episode(i)["tasks"]
        assert json.loads(m.episode(new)["demoforge/seed"]) == i
    idx = np.concatenate([m.read_episode(e)["index"] for e in range(5)])
    np.testing.assert_array_equal(idx, np.arange(104))
    # video: the same compressed packets, not re-encoded
    key = "videos/observation.images.front/chunk-000/file-000.mp4"
    assert packets(tmp_path / "m" / key) == packets(a / key) + packets(b / key)
    merge_meta = json.loads((tmp_path / "m/meta/demoforge/merge.json").read_text())
    assert all(s["videos_copied"]["observation.images.front"] for s in merge_meta["sources"])


def test_merged_stats_are_exact(tmp_path):
    a = write(tmp_path / "a", n=2)
    b = write(tmp_path / "b", n=3)
    merge_datasets([a, b], tmp_path / "m")
    stats = json.loads((tmp_path / "m/meta/stats.json").read_text())
    state = np.concatenate([episode(e, 20 + e)["observation.state"] for e in (0, 1, 0, 1, 2)]).astype(float)
    np.testing.assert_allclose(stats["observation.state"]["q01"], np.quantile(state, 0.01, axis=0), rtol=1e-12)
    np.testing.assert_allclose(stats["observation.state"]["std"], state.std(0), rtol=1e-12)
    px = np.concatenate([episode(e, 20 + e)["observation.images.front"] for e in (0, 1, 0, 1, 2)])
    px = px.reshape(-1, 3) / 255
    np.testing.assert_allclose(np.ravel(stats["observation.images.front"]["q90"]), np.quantile(px, 0.9, axis=0))
    assert stats["index"]["max"] == [103.0]


def test_merge_respects_duration_cap(tmp_path):
    a = write(tmp_path / "a", n=2)
    b = write(tmp_path / "b", n=2)
    merge_datasets([a, b], tmp_path / "m", video_file_duration_s=1.5)
    eps = pq.read_table(tmp_path / "m/meta/episodes/chunk-000/file-000.parquet").to_pylist()
    assert [r["videos/observation.images.front/file_index"] for r in eps] == [0, 0, 1, 1]


def test_merge_lerobot_fixtures(tmp_path):
    # 0.6.1 and 0.4.4 write different encoder info blocks: the second is re-encoded, both load
    info = merge_datasets([FIXTURES / "lerobot061_video", FIXTURES / "lerobot044_video"], tmp_path / "m")
    assert info.total_episodes == 6
    m = open_dataset(tmp_path / "m")
    src = open_dataset(FIXTURES / "lerobot044_video")
    np.testing.assert_array_equal(m.read_episode(4)["action"], src.read_episode(1)["action"])
    diff = np.abs(m.read_video(4, "observation.images.front").astype(float)
                  - src.read_video(1, "observation.images.front")).mean() / 255
    assert diff <= 0.05
    sources = json.loads((tmp_path / "m/meta/demoforge/merge.json").read_text())["sources"]
    assert [s["videos_copied"]["observation.images.front"] for s in sources] == [True, False]


def test_fps_mismatch_is_named(tmp_path):
    a = write(tmp_path / "a", n=1, features=STATE_ONLY)
    with DatasetWriter.create(tmp_path / "b", fps=15, features=STATE_ONLY) as w:
        w.add_episode(episode(0, 5, STATE_ONLY), task="t")
    with pytest.raises(DatasetError, match=r"fps 15 but .* has 30"):
        merge_datasets([a, tmp_path / "b"], tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_feature_mismatch_is_named(tmp_path):
    a = write(tmp_path / "a", n=1, features=STATE_ONLY)
    other = dict(STATE_ONLY, action=Feature("float32", (5,)))
    with DatasetWriter.create(tmp_path / "b", fps=30, features=other) as w:
        w.add_episode(episode(0, 5, other), task="t")
    with pytest.raises(DatasetError, match=r"feature 'action' is float32\[5\] but float32\[4\]"):
        merge_datasets([a, tmp_path / "b"], tmp_path / "m")


def test_merge_into_existing_root_refused(tmp_path):
    a = write(tmp_path / "a", n=1, features=STATE_ONLY)
    b = write(tmp_path / "b", n=1, features=STATE_ONLY)
    with pytest.raises(DatasetError, match="is the input"):
        merge_datasets([a], a)
    with pytest.raises(DatasetError, match="lies inside the input"):
        merge_datasets([a], a / "data" / "chunk-001")
    with pytest.raises(DatasetError, match="not empty"):
        merge_datasets([a], b)


def _files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
            and p.name != "merge.json"}  # merge.json names the sources' roots


def test_merger_fed_one_source_at_a_time_writes_the_same_bytes_with_any_threads(tmp_path):
    a, b = write(tmp_path / "a", n=2), write(tmp_path / "b", n=3)
    merge_datasets([a, b], tmp_path / "all")
    from demoforge.dataset import DatasetMerger

    merger = DatasetMerger(tmp_path / "fed")
    merger.add(a)
    assert not (tmp_path / "fed" / "meta" / "info.json").exists()  # not a dataset until finished
    merger.add(b)
    assert merger.finish(threads=3).total_episodes == 5  # statistics of several features at once
    assert _files(tmp_path / "fed") == _files(tmp_path / "all")


def test_merger_refuses_a_later_source_that_does_not_agree(tmp_path):
    from demoforge.dataset import DatasetMerger

    a = write(tmp_path / "a", n=1, features=STATE_ONLY)
    with DatasetWriter.create(tmp_path / "b", fps=15, features=STATE_ONLY) as w:
        w.add_episode(episode(0, 5, STATE_ONLY), task="t")
    with pytest.raises(DatasetError, match=r"fps 15 but .* has 30"):
        with DatasetMerger(tmp_path / "m") as merger:
            merger.add(a)
            merger.add(tmp_path / "b")
    assert not (tmp_path / "m" / "meta" / "info.json").exists()
    with pytest.raises(DatasetError, match="no source datasets"):
        DatasetMerger(tmp_path / "n").finish()
