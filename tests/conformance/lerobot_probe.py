"""Load v3 datasets with the REAL lerobot and dump every frame to .npz files.

Run by the lerobot venv's python (Python >= 3.12, lerobot 0.6.1), never imported by
demoforge's own tests:

    python lerobot_probe.py SPEC.json

SPEC.json is a list of {"root": ..., "out": ...npz, "options": {...}}: several datasets per
call because importing torch and lerobot costs seconds. `options` go to LeRobotDataset
(e.g. `episodes`, `delta_timestamps`), except `aggregate`: a list of source roots that
lerobot's own `aggregate_datasets` first joins into ROOT. For each entry,
`LeRobotDataset(repo_id="local/x", root=ROOT, **options)` is loaded and indexed frame by frame
(`ds[i]`, video decoded by lerobot's own backend), so the timestamp -> video-frame
mapping, the task lookup and the parquet schema are all lerobot's. The .npz holds, per
feature, the stacked values of every frame in dataset order: video features as uint8
(T, H, W, C) rounded from lerobot's [0, 1] floats, numeric features as lerobot returned
them (with `delta_timestamps`, a leading axis per delta and `<key>_is_pad` flags).
`__task__` holds the task string of every frame, `__meta__` a JSON summary and
`__stats__` the statistics lerobot loaded from meta/stats.json. When lerobot fails on a
root, its traceback goes to OUT.npz.error and the next root is probed.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import traceback


def _isolate_hf_state() -> str:
    """Keep lerobot and `datasets` offline and away from the home folder."""
    scratch = tempfile.mkdtemp(prefix="lerobot-probe-")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ["HF_HOME"] = os.path.join(scratch, "hf_home")
    os.environ["HF_DATASETS_CACHE"] = os.path.join(scratch, "hf_datasets")
    os.environ["HF_LEROBOT_HOME"] = os.path.join(scratch, "lerobot_home")
    os.environ.setdefault("SVT_LOG", "1")
    return scratch


def probe(root: str, out: str, options: dict) -> None:
    import numpy as np
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    options = dict(options)
    sources = options.pop("aggregate", None)
    if sources:
        from lerobot.datasets.aggregate import aggregate_datasets

        aggregate_datasets(repo_ids=[f"local/src{i}" for i in range(len(sources))], aggr_repo_id="local/x",
                           roots=sources, aggr_root=root)
    ds = LeRobotDataset(repo_id="local/x", root=root, **options)
    video_keys = list(ds.meta.video_keys)
    depth_keys = set(getattr(ds.meta, "depth_keys", []))
    keys = list(ds.meta.features) + [f"{k}_is_pad" for k in (options.get("delta_timestamps") or {})]
    columns: dict[str, list] = {}
    tasks: list[str] = []
    for i in range(len(ds)):
        item = ds[i]
        tasks.append(item["task"])
        for key in keys:
            value = item[key]
            arr = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
            if key in depth_keys:
                # depth maps come back as (..., 1, H, W) float32 in lerobot's output unit: kept as is
                arr = np.moveaxis(arr, -3, -1).astype(np.float32)
            elif key in video_keys:
                # lerobot returns (..., C, H, W) float32 in [0, 1].
                arr = np.clip(np.rint(np.moveaxis(arr, -3, -1) * 255.0), 0, 255).astype(np.uint8)
            columns.setdefault(key, []).append(arr)
    arrays = {key: np.stack(values) for key, values in columns.items()}
    # A task that is not a str (lerobot returns the int 0 when tasks.parquet lacks its
    # pandas index metadata) is kept visible as its repr instead of being coerced.
    arrays["__task__"] = np.array([t if isinstance(t, str) else repr(t) for t in tasks], dtype=str)
    meta = {
        "num_episodes": int(ds.num_episodes),
        "num_frames": int(ds.num_frames),
        "len": len(ds),
        "fps": int(ds.fps),
        "video_backend": ds._video_backend,
        "video_keys": video_keys,
        "features": list(ds.meta.features),
        "tasks": [str(t) for t in ds.meta.tasks.index],
        "robot_type": ds.meta.robot_type,
        "names": {k: ft.get("names") for k, ft in ds.meta.features.items()},
    }
    arrays["__meta__"] = np.array(json.dumps(meta))
    stats = {k: {s: np.asarray(v).tolist() for s, v in d.items()} for k, d in (ds.meta.stats or {}).items()}
    arrays["__stats__"] = np.array(json.dumps(stats))
    np.savez(out, **arrays)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} SPEC.json", file=sys.stderr)
        return 2
    with open(argv[1]) as fh:
        spec = json.load(fh)
    scratch = _isolate_hf_state()
    try:
        for entry in spec:
            try:
                probe(entry["root"], entry["out"], entry.get("options") or {})
            except Exception:
                with open(entry["out"] + ".error", "w") as fh:
                    fh.write(traceback.format_exc())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
