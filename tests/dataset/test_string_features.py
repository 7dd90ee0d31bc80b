"""Per-frame text features (dtype "string", shape [1]), as lerobot declares them: written,
read back, merged, checked; no statistics; bad values refused before anything is written."""

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from demoforge.dataset import DatasetWriter, Feature, check_dataset, open_dataset
from demoforge.dataset.merge import merge_datasets
from demoforge.errors import DatasetError

FEATURES = {"observation.state": Feature("float32", (2,)), "goal.action": Feature("string", (1,))}


def _write(root, texts_per_episode, frame_api=False):
    with DatasetWriter.create(root, fps=10, features=FEATURES) as w:
        for e, texts in enumerate(texts_per_episode):
            state = np.arange(2 * len(texts), dtype=np.float32).reshape(-1, 2) + e
            if frame_api:
                for t, text in enumerate(texts):
                    w.add_frame({"observation.state": state[t], "goal.action": text}, task="stack")
                w.save_episode()
            else:
                w.add_episode({"observation.state": state, "goal.action": np.array(texts, dtype=object)}, task="stack")
    return root


@pytest.mark.parametrize("frame_api", [False, True])
def test_texts_round_trip_without_statistics(tmp_path, frame_api):
    episodes = [["pick red", "pick red", "stack red on blue"], ["idle", "unstack ü from β"]]
    root = _write(tmp_path / "ds", episodes, frame_api)
    assert check_dataset(root) == []
    ds = open_dataset(root)
    assert ds.info.features["goal.action"].dtype == "string"
    for e, texts in enumerate(episodes):
        assert ds.read_episode(e, ["goal.action"])["goal.action"].tolist() == texts
    stats = json.loads((root / "meta" / "stats.json").read_text())
    assert "goal.action" not in stats and "observation.state" in stats
    episodes_table = pq.read_table(root / "meta" / "episodes" / "chunk-000" / "file-000.parquet")
    assert not [c for c in episodes_table.column_names if c.startswith("stats/goal.action/")]
    hf = json.loads(pq.read_schema(root / "data" / "chunk-000" / "file-000.parquet").metadata[b"huggingface"])
    assert hf["info"]["features"]["goal.action"] == {"dtype": "string", "_type": "Value"}


def test_merge_keeps_texts(tmp_path):
    a = _write(tmp_path / "a", [["pick red"]])
    b = _write(tmp_path / "b", [["stack red on blue", "idle"]])
    merge_datasets([a, b], tmp_path / "m")
    assert check_dataset(tmp_path / "m") == []
    m = open_dataset(tmp_path / "m")
    assert [m.read_episode(e, ["goal.action"])["goal.action"].tolist() for e in range(2)] == \
        [["pick red"], ["stack red on blue", "idle"]]


@pytest.mark.parametrize("bad, frame", [([b"bytes"], 0), (["ok", None], 1), (["ok", "ok", 3], 2)])
def test_a_frame_that_is_not_text_is_refused_before_writing(tmp_path, bad, frame):
    with DatasetWriter.create(tmp_path / "ds", fps=10, features=FEATURES) as w:
        with pytest.raises(DatasetError, match=rf"goal.action.*at frame {frame} is not a string.*give every frame a str"):
            w.add_episode({"observation.state": np.zeros((len(bad), 2), np.float32),
                           "goal.action": np.array(bad, dtype=object)}, task="stack")
        assert w.num_episodes == 0
        w.discard()  # nothing was written: an empty dataset refuses to finalize


def test_a_string_feature_has_one_text_per_frame(tmp_path):
    with pytest.raises(DatasetError, match=r"goal.action.*one text per frame.*must be \(1,\)"):
        DatasetWriter.create(tmp_path / "ds", fps=10, features={"goal.action": Feature("string", (2,))})
