"""Datasets written by demoforge's DatasetWriter, loaded by the REAL lerobot 0.6.1.

Every scenario is written here, then all of them are loaded in one lerobot process
(torch import costs seconds) that iterates every frame with video decoded. Non-video
values must come back identical, decoded pixels within a mean absolute difference of
0.05 on a [0, 1] scale of what was written (and closer to their own frame than to a
neighbour's, so a one-frame shift cannot hide in the tolerance), tasks as strings.
"""

from __future__ import annotations

import json
import traceback
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow.parquet as pq
import pytest

from conformance_scenarios import (
    FPS, VIDEO_TOLERANCE, Written, assert_lerobot_sees_what_was_written, cameras, episode, state_features, write,
)
from demoforge.dataset import DatasetWriter, Feature, VideoSettings
from lerobot_harness import FIXTURES, LerobotDump, ProbeFailure, mean_abs_diff01, probe_many, require_dump

pytestmark = pytest.mark.conformance


def scenario_state_only(root: Path) -> Written:
    features = {
        **state_features(),
        "observation.effort": Feature("float64", (3,)),
        "next.reward": Feature("float32", (1,)),
        "counter": Feature("int64", (1,)),
    }
    plan = [(5, "pick the cube"), (17, "place the cube"), (9, "pick the cube")]
    return write(root, features, plan, seed=1, frame_api={1})


def scenario_two_cameras_h264(root: Path) -> Written:
    features = {**state_features(), **cameras((96, 96), (48, 64))}
    plan = [(12, "open the drawer"), (20, "close the drawer"), (7, "open the drawer")]
    return write(root, features, plan, seed=2, frame_api={2}, video=VideoSettings())


def scenario_lerobot_default_av1(root: Path) -> Written:
    features = {**state_features(), **cameras((96, 96), (48, 64))}
    plan = [(10, "stack red on blue"), (15, "stack blue on red")]
    return write(root, features, plan, seed=3, frame_api={1}, video=VideoSettings.lerobot_default())


def scenario_extra_columns(root: Path) -> Written:
    features = {**state_features(), **cameras((64, 64))}
    plan = [(8, "wipe"), (11, "wipe"), (6, "sweep")]
    return write(root, features, plan, seed=4, extra=_extra)


def _extra(i: int) -> dict:
    return {"seed": 1000 + i, "outcome": {"success": i != 1, "steps": [i, i + 1]}}


def scenario_many_files(root: Path) -> Written:
    """Caps small enough that new data and video files start mid-run."""
    features = {**state_features(), **cameras((48, 64), (32, 32))}
    plan = [(14, "a"), (9, "b"), (16, "c"), (12, "a"), (10, "b")]
    return write(root, features, plan, seed=5, video_file_duration_s=0.6, data_file_size_mb=0.002)


class _Interrupted(Exception):
    pass


def scenario_resumed(root: Path) -> Written:
    """Interrupted mid-episode (frames of a third episode added), resumed, finished."""
    features = {**state_features(), **cameras((48, 64))}
    rng = np.random.default_rng(np.random.SeedSequence([6]))
    written = Written(features)
    try:
        with DatasetWriter.create(root, fps=FPS, features=features, video=VideoSettings.lerobot_default()) as w:
            for length, task in ((9, "first"), (13, "second")):
                cols = episode(rng, length, features)
                w.add_episode(cols, task=task)
                written.episodes.append(cols)
                written.tasks.append(task)
            partial = episode(rng, 5, features)
            for t in range(5):
                w.add_frame({k: v[t] for k, v in partial.items()}, task="lost")
            raise _Interrupted
    except _Interrupted:
        pass
    with DatasetWriter.resume(root) as w:
        cols = episode(rng, 11, features)
        assert w.add_episode(cols, task="third") == 2
        written.episodes.append(cols)
        written.tasks.append("third")
    return written


SCENARIOS: dict[str, Callable[[Path], Written]] = {
    "state_only": scenario_state_only,
    "two_cameras_h264": scenario_two_cameras_h264,
    "lerobot_default_av1": scenario_lerobot_default_av1,
    "extra_columns": scenario_extra_columns,
    "many_files": scenario_many_files,
    "resumed": scenario_resumed,
}


# Extra lerobot views of a scenario, as training code loads datasets: a subset of the
# episodes, and neighbouring frames through delta_timestamps (action chunks, frame stacks).
DELTAS = {"action": [-1, 0, 1, 2], "observation.images.front": [-2, 0]}  # [frames]
VIEWS = {
    "two_cameras_h264/episodes_1_2_deltas": ("two_cameras_h264", {
        "episodes": [1, 2],
        "delta_timestamps": {k: [d / FPS for d in v] for k, v in DELTAS.items()},
    }),
}


@pytest.fixture(scope="module")
def loaded(lerobot_python: str, tmp_path_factory) -> dict[str, tuple[Path, Written | str, LerobotDump | ProbeFailure | None]]:
    """scenario or view -> (root, what was written or the writer's traceback, lerobot's view)."""
    base = tmp_path_factory.mktemp("writer_conformance")
    written: dict[str, Written | str] = {}
    for name, build in SCENARIOS.items():
        try:
            written[name] = build(base / name)
        except Exception:  # each scenario reports its own failure below
            written[name] = traceback.format_exc()
    entries = {n: (n, None) for n in SCENARIOS}
    entries.update(VIEWS)
    ok = [v for v, (n, _) in entries.items() if isinstance(written[n], Written)]
    dumps = dict(zip(ok, probe_many(lerobot_python, [base / entries[v][0] for v in ok], base / "probe",
                                    [entries[v][1] for v in ok])))
    return {v: (base / n, written[n], dumps.get(v)) for v, (n, _) in entries.items()}


def _get(loaded, name: str) -> tuple[Path, Written, LerobotDump]:
    root, written, dump = loaded[name]
    if isinstance(written, str):
        pytest.fail(f"demoforge's writer failed on scenario {name}:\n{written}", pytrace=False)
    return root, written, require_dump(dump)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_lerobot_loads_writer_output(name: str, loaded) -> None:
    _, written, dump = _get(loaded, name)
    assert_lerobot_sees_what_was_written(written, dump)


def test_episode_subset_with_delta_timestamps(loaded) -> None:
    """lerobot's training-time view: episodes [1, 2] only, with past/future frames per item.

    Neighbours come from the item's own episode, clamped at its ends and flagged
    `<key>_is_pad` there; a wrong dataset_from/to_index or video span shows up here."""
    _, written, dump = _get(loaded, "two_cameras_h264/episodes_1_2_deltas")
    selected = [1, 2]
    lengths = [written.lengths[e] for e in selected]
    assert dump.meta["len"] == sum(lengths)
    starts = np.cumsum([0] + written.lengths)
    np.testing.assert_array_equal(dump.columns["episode_index"].reshape(-1), np.repeat(selected, lengths))
    np.testing.assert_array_equal(dump.columns["index"].reshape(-1),
                                  np.concatenate([np.arange(starts[e], starts[e] + n) for e, n in zip(selected, lengths)]))
    assert list(dump.tasks) == [written.tasks[e] for e, n in zip(selected, lengths) for _ in range(n)]
    for key, deltas in DELTAS.items():
        rows, pads = [], []
        for e, n in zip(selected, lengths):
            t = np.arange(n)[:, None] + np.asarray(deltas)[None, :]
            rows.append(written.episodes[e][key][np.clip(t, 0, n - 1)])
            pads.append((t < 0) | (t >= n))
        expected, pad = np.concatenate(rows), np.concatenate(pads)
        np.testing.assert_array_equal(dump.columns[f"{key}_is_pad"], pad, err_msg=f"{key}_is_pad")
        got = dump.columns[key]
        assert got.shape == expected.shape, f"{key}: {got.shape} != {expected.shape}"
        if written.features[key].dtype == "video":
            for j, d in enumerate(deltas):
                mad = mean_abs_diff01(got[:, j], expected[:, j])
                assert mad <= VIDEO_TOLERANCE, f"{key} delta {d}: mean abs diff {mad:.4f}"
        else:
            np.testing.assert_array_equal(got, expected, err_msg=key)


def test_av1_settings_are_lerobots_own(loaded) -> None:
    """The lerobot-default preset writes the very info block lerobot writes (same keys, values)."""
    root, _, _ = _get(loaded, "lerobot_default_av1")
    ours = json.loads((root / "meta" / "info.json").read_text())["features"]["observation.images.front"]["info"]
    assert ours["video.codec"] == "av1" and ours["video.g"] == 2 and ours["video.crf"] == 30
    assert ours["video.preset"] == 12 and ours["video.pix_fmt"] == "yuv420p"
    reference = FIXTURES / "lerobot061_video" / "meta" / "info.json"
    if reference.is_file():
        theirs = json.loads(reference.read_text())["features"]["observation.images.front"]["info"]
        assert sorted(ours) == sorted(theirs)
        for key in ("video.codec", "video.pix_fmt", "video.g", "video.crf", "video.preset", "video.fast_decode",
                    "video.video_backend", "video.extra_options", "has_audio", "is_depth_map"):
            assert ours[key] == theirs[key], key


def test_h264_settings_in_info(loaded) -> None:
    root, _, _ = _get(loaded, "two_cameras_h264")
    info = json.loads((root / "meta" / "info.json").read_text())["features"]
    for key, (h, w) in (("observation.images.front", (96, 96)), ("observation.images.wrist", (48, 64))):
        block = info[key]["info"]
        assert block["video.codec"] == "h264" and block["video.g"] == round(FPS * 0.25)
        assert (block["video.height"], block["video.width"]) == (h, w)


def test_extra_columns_survive_and_lerobot_ignores_them(loaded) -> None:
    root, _, _ = _get(loaded, "extra_columns")
    table = pq.read_table(root / "meta" / "episodes")
    extra = [c for c in table.column_names if c.startswith("demoforge/")]
    assert extra, f"no demoforge/ columns in {table.column_names}"
    assert json.loads(table.column("demoforge/seed").to_pylist()[2]) == 1002
    assert json.loads(table.column("demoforge/outcome").to_pylist()[1]) == {"success": False, "steps": [1, 2]}
    assert json.loads((root / "meta" / "demoforge" / "conformance.json").read_text()) == {"scenario": "extra_columns"}


def test_small_caps_start_new_files(loaded) -> None:
    root, _, _ = _get(loaded, "many_files")
    for key in ("observation.images.front", "observation.images.wrist"):
        mp4s = sorted((root / "videos" / key).glob("chunk-*/file-*.mp4"))
        assert len(mp4s) >= 2, f"{key}: one mp4 only, the 0.6 s cap did not start a new file"
    assert len(sorted((root / "data").glob("chunk-*/file-*.parquet"))) >= 2
    episodes = pq.read_table(root / "meta" / "episodes").to_pylist()
    for ep in episodes:
        span = ep["videos/observation.images.front/to_timestamp"] - ep["videos/observation.images.front/from_timestamp"]
        assert span == pytest.approx(ep["length"] / FPS, abs=1e-6)
