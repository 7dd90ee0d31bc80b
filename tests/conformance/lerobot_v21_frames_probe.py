"""Run under the LeRobot v2.1 reader's python (lerobot 0.3.3, datasets 3.6.0): load a v2.1 root
with LeRobotDataset as openpi does and save every frame of every camera, as uint8 (T, H, W, 3),
to an .npz (argv: ROOT OUT.npz). Kept apart from lerobot_v21_probe.py, whose dumps hold no frames."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lerobot_v21_probe import _backend, _isolate_hf_state  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(f"usage: {argv[0]} ROOT OUT.npz", file=sys.stderr)
        return 2
    scratch = _isolate_hf_state(Path(argv[2]).resolve().parent)
    try:
        return _dump(argv[1], argv[2])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _dump(root: str, out: str) -> int:
    import numpy as np
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    ds = LeRobotDataset("local/x", root=root, **_backend())
    keys = list(ds.meta.video_keys)
    frames: dict[str, list] = {k: [] for k in keys}
    for i in range(len(ds)):
        item = ds[i]
        for k in keys:  # (C, H, W) float32 in [0, 1]
            frames[k].append(np.clip(np.rint(np.moveaxis(item[k].numpy(), 0, -1) * 255.0), 0, 255).astype(np.uint8))
    arrays = {k: np.stack(v) for k, v in frames.items()}
    arrays["__meta__"] = np.array(json.dumps({"len": len(ds), "video_backend": ds.video_backend, "video_keys": keys}))
    np.savez(out, **arrays)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
