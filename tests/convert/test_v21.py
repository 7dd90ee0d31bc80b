"""The v2.1 layout's parquet schemas carry the feature tags of `datasets` 3.x, which every v2.1
reader runs (lerobot <= 0.3 and openpi pin datasets <= 3.6.0, which rejects datasets 4's `List`)."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from demoforge.convert import BakeConfig, bake
from demoforge.convert.v21 import datasets3_schema, write_v21
from tests.convert._sources import write_raw


def _tags(node) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "_type"] + [t for v in node.values() for t in _tags(v)]
    return []


def test_v21_parquet_files_tag_vectors_as_sequence(tmp_path):
    raw = write_raw(tmp_path / "raw", lengths=(6,), cams=())
    out = bake([raw], tmp_path / "v21", BakeConfig(control_space="joint_vel", lerobot_format="v2.1"))
    files = sorted(out.glob("data/*/*.parquet"))
    assert files
    for path in files:
        features = json.loads(pq.read_schema(path).metadata[b"huggingface"])["info"]["features"]
        assert features["observation.state"] == {"feature": {"dtype": "float32", "_type": "Value"}, "length": 4,
                                                 "_type": "Sequence"}
        assert "List" not in _tags(features) and features["timestamp"] == {"dtype": "float32", "_type": "Value"}


def test_datasets3_schema_rewrites_only_the_tags():
    hf = {"info": {"features": {"a": {"feature": {"dtype": "float32", "_type": "Value"}, "length": 2, "_type": "List"},
                                "b": {"feature": {"feature": {"dtype": "int64", "_type": "Value"}, "_type": "List"},
                                      "_type": "List"}}}}
    schema = pa.schema([pa.field("a", pa.list_(pa.float32(), 2))], metadata={"huggingface": json.dumps(hf),
                                                                          "other": "kept"})
    out = datasets3_schema(schema)
    got = json.loads(out.metadata[b"huggingface"])["info"]["features"]
    assert got["a"] == {"feature": {"dtype": "float32", "_type": "Value"}, "length": 2, "_type": "Sequence"}
    assert got["b"] == {"feature": {"feature": {"dtype": "int64", "_type": "Value"}, "_type": "Sequence"},
                        "_type": "Sequence"}
    assert out.metadata[b"other"] == b"kept" and out.field("a").type == schema.field("a").type
    assert datasets3_schema(pa.schema([pa.field("x", pa.int64())])).metadata in (None, {})


def test_write_v21_reports_each_episode(tmp_path):
    raw = write_raw(tmp_path / "raw", lengths=(6, 5, 4), cams=())
    v3 = bake([raw], tmp_path / "v3", BakeConfig(control_space="joint_vel"))
    events = []
    write_v21(v3, tmp_path / "v21", progress=events.append)
    assert [(e.stage, e.kind, e.item, e.done, e.total) for e in events] == [
        ("v21", "episode", f"episode {k}", k + 1, 3) for k in range(3)]
