"""Synthetic episodes shared by the writer benchmark's two sides (NumPy only).

Imported both by demoforge's interpreter and by the lerobot venv's, so both writers get
bit-identical input. Images are moving colour gradients with a moving square and
per-pixel noise: smooth enough to look like a camera, noisy enough that the encoder has
real work (a flat image would flatter both encoders).
"""

from __future__ import annotations

import numpy as np

STATE_DIM = 8
FPS = 30


def camera_shapes(layout: str) -> dict[str, tuple[int, int, int]]:
    """Named camera sets: `bench` is the issue's two 96x96 and one 224x224 cameras."""
    layouts = {
        "bench": {
            "observation.images.wrist_left": (96, 96, 3),
            "observation.images.wrist_right": (96, 96, 3),
            "observation.images.front": (224, 224, 3),
        },
        "small": {"observation.images.front": (64, 64, 3)},
        "none": {},
    }
    if layout not in layouts:
        raise KeyError(f"camera layout {layout!r} unknown; known: {sorted(layouts)}")
    return layouts[layout]


def episode(seed: int, index: int, length: int, cameras: dict[str, tuple[int, int, int]]) -> dict[str, np.ndarray]:
    """Columns of one episode: state and action (T, 8) float32, images (T, H, W, 3) uint8."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, index]))
    state = np.cumsum(rng.normal(0.0, 0.02, size=(length, STATE_DIM)), axis=0).astype(np.float32)
    action = (state + rng.normal(0.0, 0.01, size=state.shape)).astype(np.float32)
    columns: dict[str, np.ndarray] = {"observation.state": state, "action": action}
    for cam_i, (key, (h, w, _)) in enumerate(sorted(cameras.items())):
        columns[key] = _video(rng, length, h, w, phase=index * 0.37 + cam_i)
    return columns


def _video(rng: np.random.Generator, length: int, h: int, w: int, *, phase: float) -> np.ndarray:
    y = np.linspace(0.0, 1.0, h, dtype=np.float32)[:, None]
    x = np.linspace(0.0, 1.0, w, dtype=np.float32)[None, :]
    out = np.empty((length, h, w, 3), dtype=np.uint8)
    side = max(4, h // 6)
    for t in range(length):
        s = phase + t / length
        frame = np.empty((h, w, 3), dtype=np.float32)
        frame[..., 0] = 0.5 + 0.5 * np.sin(2 * np.pi * (x + s))
        frame[..., 1] = 0.5 + 0.5 * np.sin(2 * np.pi * (y - 0.7 * s))
        frame[..., 2] = 0.5 + 0.5 * np.cos(2 * np.pi * (x + y + 0.5 * s))
        frame *= 220.0
        # A square moving about two pixels per frame: consecutive frames stay distinguishable.
        r0 = int((0.5 + 0.4 * np.sin(2 * np.pi * s)) * (h - side))
        c0 = (2 * t) % (w - side)
        frame[r0:r0 + side, c0:c0 + side] = (250.0, 40.0, 40.0)
        frame += rng.normal(0.0, 3.0, size=(h, w, 1)).astype(np.float32)
        np.clip(frame, 0.0, 255.0, out=frame)
        out[t] = frame.astype(np.uint8)
    return out
