"""Writing known episodes with DatasetWriter and checking lerobot's view of them.

Shared by the writer and merge conformance tests (not a test module itself).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from demoforge.dataset import DatasetWriter, Feature
from lerobot_harness import LerobotDump, mean_abs_diff01

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


def frames(rng: np.random.Generator, length: int, h: int, w: int) -> np.ndarray:
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


def episode(rng: np.random.Generator, length: int, features: dict[str, Feature]) -> dict[str, np.ndarray]:
    cols: dict[str, np.ndarray] = {}
    for key, f in features.items():
        if f.dtype == "video":
            cols[key] = frames(rng, length, f.shape[0], f.shape[1])
        elif f.dtype == "bool":
            cols[key] = rng.random((length, *f.shape)) < 0.5
        elif f.dtype.startswith("int"):
            cols[key] = rng.integers(-1000, 1000, size=(length, *f.shape)).astype(f.dtype)
        else:
            cols[key] = rng.normal(0.0, 1.0, size=(length, *f.shape)).astype(f.dtype)
    return cols


def write(root: Path, features: dict[str, Feature], plan: list[tuple[int, str]], *, seed: int,
           frame_api: set[int] = frozenset(), extra: Callable[[int], dict] | None = None,
           **create: Any) -> Written:
    """Write episodes (length, task) with add_episode, or add_frame for indices in frame_api."""
    rng = np.random.default_rng(np.random.SeedSequence([seed]))
    written = Written(features)
    with DatasetWriter.create(root, fps=FPS, features=features, robot_type="conformance_bot", **create) as w:
        for i, (length, task) in enumerate(plan):
            cols = episode(rng, length, features)
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


def state_features() -> dict[str, Feature]:
    return {
        "observation.state": Feature("float32", (8,), names=[f"s{i}" for i in range(8)]),
        "action": Feature("float32", (8,), names=[f"a{i}" for i in range(8)]),
    }


def cameras(*shapes: tuple[int, int]) -> dict[str, Feature]:
    names = ["observation.images.front", "observation.images.wrist", "observation.images.side"]
    return {names[i]: Feature("video", (h, w, 3), names=CAMERA_NAMES) for i, (h, w) in enumerate(shapes)}


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
        if f.dtype != "video":
            continue
        # Per-channel [3, 1, 1] on [0, 1], as lerobot shapes image stats. Re-encoded or
        # lerobot-written sources are measured on decoded pixels, hence the tolerance.
        mean = written.column(key).reshape(-1, 3).mean(axis=0) / 255.0
        got_mean = np.asarray(dump.stats[key]["mean"], dtype=np.float64)
        assert got_mean.shape == (3, 1, 1), f"stats {key} mean shape {got_mean.shape}"
        np.testing.assert_allclose(got_mean.ravel(), mean, atol=0.01, err_msg=f"stats {key} mean")

    for key, f in written.features.items():
        if f.dtype == "video":
            continue
        values = written.column(key).astype(np.float64).reshape(n, -1)
        stats = dump.stats[key]
        np.testing.assert_allclose(np.ravel(stats["min"]), values.min(axis=0), err_msg=f"stats {key} min")
        np.testing.assert_allclose(np.ravel(stats["max"]), values.max(axis=0), err_msg=f"stats {key} max")
        np.testing.assert_allclose(np.ravel(stats["mean"]), values.mean(axis=0), rtol=1e-5, atol=1e-6,
                                   err_msg=f"stats {key} mean")
