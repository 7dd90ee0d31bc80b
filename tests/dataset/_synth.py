"""Small synthetic episodes shared by the dataset tests."""

import numpy as np

from demoforge.dataset import Feature

FEATURES = {
    "observation.state": Feature("float32", (4,), ["j0", "j1", "j2", "gripper"]),
    "action": Feature("float32", (4,)),
    "observation.images.front": Feature("video", (32, 48, 3)),
}
STATE_ONLY = {k: v for k, v in FEATURES.items() if v.dtype != "video"}


def episode(seed: int, length: int = 20, features=FEATURES) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    cols = {}
    for key, ft in features.items():
        if ft.dtype == "video":
            h, w, _ = ft.shape
            t = np.arange(length)[:, None, None]
            x = np.arange(w)[None, None, :]
            img = np.zeros((length, h, w, 3), np.uint8)
            img[..., 0] = (x * 5 + t * 3) % 256  # smooth moving gradient: codec friendly
            img[..., 1] = (seed * 40) % 256
            img[..., 2] = np.arange(h)[None, :, None] * 4
            cols[key] = img
        else:
            cols[key] = rng.normal(size=(length, ft.shape[0])).astype(ft.dtype)
    return cols
