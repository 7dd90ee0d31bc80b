"""Small synthetic episodes: a coloured square sliding across a camera image, with
matching joint-like state and actions. Used by `demoforge demo`, benchmarks and tests
of code that needs a dataset but no simulator."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from demoforge.dataset.keys import ACTION, STATE, image_key
from demoforge.dataset.layout import Feature
from demoforge.dataset.video import VideoSettings
from demoforge.dataset.writer import DatasetWriter

TASKS = ("move the red square to the right", "move the blue square to the left")


def synthetic_features(*, height: int = 96, width: int = 96, dof: int = 7) -> dict[str, Feature]:
    names = [f"joint_{i}" for i in range(dof)] + ["gripper"]
    return {
        STATE: Feature("float32", (dof + 1,), names),
        ACTION: Feature("float32", (dof + 1,), names),
        image_key("front"): Feature("video", (height, width, 3)),
    }


def synthetic_episode(rng: np.random.Generator, *, length: int, task_index: int, height: int = 96, width: int = 96,
                      dof: int = 7) -> dict[str, np.ndarray]:
    """One episode: state follows a smooth random path; the action is the next state."""
    t = np.linspace(0.0, 1.0, length + 1)[:, None]
    phase = rng.uniform(0, 2 * np.pi, size=(1, dof + 1))
    path = (0.5 * np.sin(2 * np.pi * t + phase) + rng.normal(0, 0.01, size=(length + 1, dof + 1))).astype(np.float32)
    frames = np.full((length, height, width, 3), 235, np.uint8)
    size = max(4, height // 6)
    colour = (220, 40, 40) if task_index == 0 else (40, 60, 220)
    for k in range(length):
        frac = k / max(1, length - 1)
        x = int((frac if task_index == 0 else 1 - frac) * (width - size))
        y = (height - size) // 2
        frames[k, y:y + size, x:x + size] = colour
    return {STATE: path[:-1], ACTION: path[1:], image_key("front"): frames}


def write_synthetic_dataset(root: str | Path, *, episodes: int = 4, length: int = 60, fps: int = 30, seed: int = 0,
                            video: VideoSettings | None = None) -> Path:
    """Write a small synthetic dataset with one camera to `root` and return it."""
    features = synthetic_features()
    with DatasetWriter.create(root, fps=fps, features=features, robot_type="synthetic", video=video) as writer:
        for e in range(episodes):
            rng = np.random.default_rng(np.random.SeedSequence([seed, e]))
            cols = synthetic_episode(rng, length=length, task_index=e % len(TASKS))
            writer.add_episode(cols, task=TASKS[e % len(TASKS)], extra={"seed": seed, "episode": e})
        writer.write_meta_file("demo.json", {"kind": "synthetic", "episodes": episodes, "seed": seed})
    return Path(root)
