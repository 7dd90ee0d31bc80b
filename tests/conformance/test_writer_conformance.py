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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow.parquet as pq
import pytest

from demoforge.dataset import DatasetWriter, Feature, VideoSettings
from lerobot_harness import FIXTURES, LerobotDump, ProbeFailure, mean_abs_diff01, probe_many, require_dump

pytestmark = pytest.mark.conformance

FPS = 30
VIDEO_TOLERANCE = 0.05  # mean |decoded - written| on [0, 1], the codec tolerance
CAMERA_NAMES = ["height", "width", "channels"]


@dataclass
class Written:
    """What a scenario handed to the writer, in dataset order."""

    features: dict[str, Feature]
    episodes: list[dict[str, np.ndarray]] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)  # one per episode

    def column(self, key: str) -> np.ndarray:
        return np.concatenate([ep[key] for ep in self.episodes])

    @property
    def lengths(self) -> list[int]:
        return [len(next(iter(ep.values()))) for ep in self.episodes]


def _frames(rng: np.random.Generator, length: int, h: int, w: int) -> np.ndarray:
    """Colour gradients with a square moving ~3 px/frame and mild noise (uint8 RGB)."""
    y = np.linspace(0.0, 1.0, h)[:, None]
    x = np.linspace(0.0, 1.0, w)[None, :]
    phase = rng.uniform(0.0, 1.0)
    side = max(6, h // 5)
    out = np.empty((length, h, w, 3), np.uint8)
    for t in range(length):
        s = phase + 0.03 * t
        img = np.stack([0.5 + 0.45 * np.sin(2 * np.pi * (x + s)) + 0 * y,
                        0.5 + 0.45 * np.sin(2 * np.pi * (y - s)) + 0 * x,
                        0.5 + 0.45 * np.cos(2 * np.pi * (x + y + s))], axis=-1) * 255.0
        r0 = (3 * t) % (h - side)
        c0 = (5 * t + 7) % (w - side)
        img[r0:r0 + side, c0:c0 + side] = (240.0, 30.0, 200.0)
        img += rng.normal(0.0, 2.0, size=img.shape)
        out[t] = np.clip(img, 0, 255).astype(np.uint8)
    return out


def _episode(rng: np.random.Generator, length: int, features: dict[str, Feature]) -> dict[str, np.ndarray]:
    cols: dict[str, np.ndarray] = {}
    for key, f in features.items():
        if f.dtype == "video":
            cols[key] = _frames(rng, length, f.shape[0], f.shape[1])
        elif f.dtype == "bool":
            cols[key] = rng.random((length, *f.shape)) < 0.5
        elif f.dtype.startswith("int"):
            cols[key] = rng.integers(-1000, 1000, size=(length, *f.shape)).astype(f.dtype)
        else:
            cols[key] = rng.normal(0.0, 1.0, size=(length, *f.shape)).astype(f.dtype)
    return cols


def _write(root: Path, features: dict[str, Feature], plan: list[tuple[int, str]], *, seed: int,
           frame_api: set[int] = frozenset(), extra: Callable[[int], dict] | None = None,
           **create: Any) -> Written:
    """Write episodes (length, task) with add_episode, or add_frame for indices in frame_api."""
    rng = np.random.default_rng(np.random.SeedSequence([seed]))
    written = Written(features)
    with DatasetWriter.create(root, fps=FPS, features=features, robot_type="conformance_bot", **create) as w:
        for i, (length, task) in enumerate(plan):
            cols = _episode(rng, length, features)
            ep_extra = extra(i) if extra else None
            if i in frame_api:
                for t in range(length):
                    w.add_frame({k: v[t] for k, v in cols.items()}, task=task)
                assert w.save_episode(extra=ep_extra) == i
            else:
                assert w.add_episode(cols, task=task, extra=ep_extra) == i
            written.episodes.append(cols)
            written.tasks.append(task)
        if extra:
            w.write_meta_file("conformance.json", {"scenario": root.name})
    return written


def _state_features() -> dict[str, Feature]:
    return {
        "observation.state": Feature("float32", (8,), names=[f"s{i}" for i in range(8)]),
        "action": Feature("float32", (8,), names=[f"a{i}" for i in range(8)]),
    }


def _cameras(*shapes: tuple[int, int]) -> dict[str, Feature]:
    names = ["observation.images.front", "observation.images.wrist", "observation.images.side"]
    return {names[i]: Feature("video", (h, w, 3), names=CAMERA_NAMES) for i, (h, w) in enumerate(shapes)}


def scenario_state_only(root: Path) -> Written:
    features = {
        **_state_features(),
        "observation.effort": Feature("float64", (3,)),
        "next.reward": Feature("float32", (1,)),
        "counter": Feature("int64", (1,)),
    }
    plan = [(5, "pick the cube"), (17, "place the cube"), (9, "pick the cube")]
    return _write(root, features, plan, seed=1, frame_api={1})


def scenario_two_cameras_h264(root: Path) -> Written:
    features = {**_state_features(), **_cameras((96, 96), (48, 64))}
    plan = [(12, "open the drawer"), (20, "close the drawer"), (7, "open the drawer")]
    return _write(root, features, plan, seed=2, frame_api={2}, video=VideoSettings())


def scenario_lerobot_default_av1(root: Path) -> Written:
    features = {**_state_features(), **_cameras((96, 96), (48, 64))}
    plan = [(10, "stack red on blue"), (15, "stack blue on red")]
    return _write(root, features, plan, seed=3, frame_api={1}, video=VideoSettings.lerobot_default())


def scenario_extra_columns(root: Path) -> Written:
    features = {**_state_features(), **_cameras((64, 64))}
    plan = [(8, "wipe"), (11, "wipe"), (6, "sweep")]
    extra = lambda i: {"seed": 1000 + i, "outcome": {"success": i != 1, "steps": [i, i + 1]}}  # noqa: E731
    return _write(root, features, plan, seed=4, extra=extra)


def scenario_many_files(root: Path) -> Written:
    """Caps small enough that new data and video files start mid-run."""
    features = {**_state_features(), **_cameras((48, 64), (32, 32))}
    plan = [(14, "a"), (9, "b"), (16, "c"), (12, "a"), (10, "b")]
    return _write(root, features, plan, seed=5, video_file_duration_s=0.6, data_file_size_mb=0.002)


SCENARIOS: dict[str, Callable[[Path], Written]] = {
    "state_only": scenario_state_only,
    "two_cameras_h264": scenario_two_cameras_h264,
    "lerobot_default_av1": scenario_lerobot_default_av1,
    "extra_columns": scenario_extra_columns,
    "many_files": scenario_many_files,
}


@pytest.fixture(scope="module")
def loaded(lerobot_python: str, tmp_path_factory) -> dict[str, tuple[Path, Written | str, LerobotDump | ProbeFailure | None]]:
    """scenario -> (root, what was written or the writer's traceback, lerobot's view)."""
    base = tmp_path_factory.mktemp("writer_conformance")
    written: dict[str, Written | str] = {}
    for name, build in SCENARIOS.items():
        try:
            written[name] = build(base / name)
        except Exception:  # each scenario reports its own failure below
            written[name] = traceback.format_exc()
    ok = [n for n in SCENARIOS if isinstance(written[n], Written)]
    dumps = dict(zip(ok, probe_many(lerobot_python, [base / n for n in ok], base / "probe")))
    return {n: (base / n, written[n], dumps.get(n)) for n in SCENARIOS}


def _get(loaded, name: str) -> tuple[Path, Written, LerobotDump]:
    root, written, dump = loaded[name]
    if isinstance(written, str):
        pytest.fail(f"demoforge's writer failed on scenario {name}:\n{written}", pytrace=False)
    return root, written, require_dump(dump)


def assert_lerobot_sees_what_was_written(written: Written, dump: LerobotDump) -> None:
    lengths = written.lengths
    n = sum(lengths)
    assert dump.meta["num_episodes"] == len(lengths)
    assert dump.meta["num_frames"] == dump.meta["len"] == n
    assert dump.meta["fps"] == FPS

    for key, f in written.features.items():
        if f.dtype == "video":
            continue
        expected = written.column(key)
        if f.dtype == "float64":
            # lerobot's hf_transform_to_torch builds tensors from Python floats, i.e. in
            # torch's default float32, whatever the parquet holds (here: double).
            expected = expected.astype(np.float32)
        got = dump.columns[key]
        assert got.size == expected.size, f"{key}: lerobot returned shape {got.shape}, wrote {expected.shape}"
        np.testing.assert_array_equal(got.reshape(expected.shape), expected, err_msg=key)

    starts = np.cumsum([0] + lengths[:-1])
    frame_index = np.concatenate([np.arange(k) for k in lengths])
    np.testing.assert_array_equal(dump.columns["frame_index"].reshape(-1), frame_index)
    np.testing.assert_array_equal(dump.columns["episode_index"].reshape(-1), np.repeat(np.arange(len(lengths)), lengths))
    np.testing.assert_array_equal(dump.columns["index"].reshape(-1), np.arange(n))
    np.testing.assert_array_equal(dump.columns["timestamp"].reshape(-1), (frame_index / FPS).astype(np.float32))
    assert list(dump.tasks) == [t for t, k in zip(written.tasks, lengths) for _ in range(k)]
    # Same task string -> same task_index, distinct strings -> distinct indices.
    task_index = dump.columns["task_index"].reshape(-1)
    pairs = set(zip(dump.tasks.tolist(), task_index.tolist()))
    assert len(pairs) == len(set(written.tasks)) == len(set(task_index.tolist()))

    for key, f in written.features.items():
        if f.dtype != "video":
            continue
        got = dump.columns[key]
        assert got.shape == (n, *f.shape), key
        for ep, (start, length) in enumerate(zip(starts, lengths)):
            ours, theirs = written.episodes[ep][key], got[start:start + length]
            mad = mean_abs_diff01(theirs, ours)
            assert mad <= VIDEO_TOLERANCE, f"{key} episode {ep}: mean abs diff {mad:.4f} > {VIDEO_TOLERANCE}"
            if length > 2:
                # A one-frame shift (wrong from_timestamp, frames of a neighbouring
                # episode) must be worse than the alignment actually returned.
                ahead = mean_abs_diff01(theirs[1:], ours[:-1])
                behind = mean_abs_diff01(theirs[:-1], ours[1:])
                assert mad < min(ahead, behind), f"{key} episode {ep}: decoded frames look shifted"

    for key, f in written.features.items():
        if f.dtype == "video":
            continue
        values = written.column(key).astype(np.float64).reshape(n, -1)
        stats = dump.stats[key]
        np.testing.assert_allclose(np.ravel(stats["min"]), values.min(axis=0), err_msg=f"stats {key} min")
        np.testing.assert_allclose(np.ravel(stats["max"]), values.max(axis=0), err_msg=f"stats {key} max")
        np.testing.assert_allclose(np.ravel(stats["mean"]), values.mean(axis=0), rtol=1e-5, atol=1e-6,
                                   err_msg=f"stats {key} mean")


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_lerobot_loads_writer_output(name: str, loaded) -> None:
    _, written, dump = _get(loaded, name)
    assert_lerobot_sees_what_was_written(written, dump)


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
