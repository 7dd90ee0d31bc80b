"""A merge of demoforge- and lerobot-written datasets, loaded by the REAL lerobot 0.6.1.

Sources, in order: (A) written by DatasetWriter with lerobot's default AV1 settings,
(B) the lerobot 0.6.1 fixture (same features and encoder settings, so its packets are
copied, not re-encoded; a second DatasetWriter dataset when the fixture is absent), and
(C) written with h264, which the merge must re-encode to A's settings. A 1 s duration
cap (shorter than the fixture's episodes) makes the merged videos span several mp4
files. lerobot must then return A's frames, B's frames exactly as it returned them from
B itself, and C's frames, re-indexed, with their tasks. Also: lerobot's own
`aggregate_datasets` applied to two DatasetWriter outputs.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from conformance_scenarios import CAMERA_NAMES, Written, assert_lerobot_sees_what_was_written, write
from demoforge.dataset import Feature, VideoSettings, merge_datasets
from lerobot_harness import FIXTURES, LerobotDump, mean_abs_diff01, probe_many, require_dump

pytestmark = pytest.mark.conformance

CAMERA = "observation.images.front"
FIXTURE = FIXTURES / "lerobot061_video"


def _fixture_features() -> dict[str, Feature]:
    """The user features of the lerobot061_video fixture (names included: merge compares them)."""
    return {
        "observation.state": Feature("float32", (8,), names=[f"s{i}" for i in range(8)]),
        "action": Feature("float32", (8,), names=[f"a{i}" for i in range(8)]),
        CAMERA: Feature("video", (96, 96, 3), names=CAMERA_NAMES),
    }


def _split(dump: LerobotDump, features: dict[str, Feature]) -> Written:
    """lerobot's view of a dataset as per-episode columns, to serve as the expectation."""
    episode_index = dump.columns["episode_index"].reshape(-1)
    out = Written(features)
    for ep in np.unique(episode_index):
        rows = np.flatnonzero(episode_index == ep)
        out.episodes.append({k: dump.columns[k][rows].reshape(len(rows), *features[k].shape) for k in features})
        (task,) = set(dump.tasks[rows].tolist())
        out.tasks.append(str(task))
    return out


def _seed_record(i: int) -> dict:
    return {"seed": i}


@pytest.fixture(scope="module")
def merged(lerobot_python: str, tmp_path_factory):
    base = tmp_path_factory.mktemp("merge_conformance")
    features = _fixture_features()
    a = write(base / "a", features, [(12, "pick the cube"), (9, "wave")], seed=11,
              video=VideoSettings.lerobot_default())
    if (FIXTURE / "meta" / "info.json").is_file():
        b_root = FIXTURE
    else:
        b_root = base / "b"
        write(b_root, features, [(10, "place the cube"), (8, "pick the cube")], seed=12,
              video=VideoSettings.lerobot_default())
    c = write(base / "c", features, [(7, "place the cube"), (15, "stack")], seed=13, video=VideoSettings())
    out = base / "merged"
    merge_datasets([base / "a", b_root, base / "c"], out, video_file_duration_s=1.0)
    # Users also join datasets with lerobot's own tool: it must accept ours too.
    d = write(base / "d", features, [(6, "wave"), (10, "push")], seed=14, video=VideoSettings.lerobot_default(),
              extra=_seed_record)
    b_dump, merged_dump, aggregated_dump = (
        require_dump(r) for r in probe_many(
            lerobot_python, [b_root, out, base / "aggregated"], base / "probe",
            [None, None, {"aggregate": [str(base / "a"), str(base / "d")]}],
        )
    )
    b = _split(b_dump, features)
    expected = Written(features, a.episodes + b.episodes + c.episodes, a.tasks + b.tasks + c.tasks)
    aggregated = Written(features, a.episodes + d.episodes, a.tasks + d.tasks)
    return out, expected, merged_dump, len(a.episodes), len(b.episodes), aggregated, aggregated_dump


def test_lerobot_loads_merged_output(merged) -> None:
    _, expected, dump, *_ = merged
    assert_lerobot_sees_what_was_written(expected, dump)


def test_copied_episodes_decode_exactly_as_in_their_source(merged) -> None:
    """B's packets were copied: lerobot must decode the very same pixels from the merge."""
    _, expected, dump, n_a, n_b, *_ = merged
    lengths = expected.lengths
    start = sum(lengths[:n_a])
    stop = start + sum(lengths[n_a:n_a + n_b])
    source = np.concatenate([ep[CAMERA] for ep in expected.episodes[n_a:n_a + n_b]])
    assert mean_abs_diff01(dump.columns[CAMERA][start:stop], source) <= 0.002


def test_merge_copied_and_reencoded_as_expected(merged) -> None:
    out, expected, dump, *_ = merged
    record = json.loads((out / "meta" / "demoforge" / "merge.json").read_text())
    copied = [s["videos_copied"][CAMERA] for s in record["sources"]]
    assert copied == [True, True, False]
    assert len(sorted((out / "videos" / CAMERA).glob("chunk-*/file-*.mp4"))) >= 2
    assert sorted(dump.meta["tasks"]) == sorted(set(expected.tasks))


def test_lerobots_own_aggregate_accepts_writer_output(merged) -> None:
    """lerobot's aggregate_datasets on two DatasetWriter outputs (with demoforge's extra
    episode columns) gives a dataset lerobot loads with every frame right."""
    *_, aggregated, dump = merged
    assert_lerobot_sees_what_was_written(aggregated, dump)
