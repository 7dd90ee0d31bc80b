"""Load v2.1 datasets with the REAL LeRobot v2.1 reader openpi trains with, and dump what it returns.

Run by the python of scripts/lerobot-v21-venv.sh (lerobot 0.3.3 = the read path of openpi's
pinned lerobot commit, datasets 3.6.0), never imported by demoforge's tests:

    python lerobot_v21_probe.py SPEC.json

SPEC.json is a list of entries {"kind", "root", "out": ...npz}; a failure's traceback goes to
OUT.npz.error and the next entry runs. Kinds:

- "lerobot": `LeRobotDataset(repo_id, root=ROOT)` indexed frame by frame; dumps
  observation.state, action and the task of every frame.
- "openpi": what openpi's `create_torch_dataset` and `compute_norm_stats` do, with the
  export's own config module (meta/openpi/demoforge_config.py, run against the faithful
  reading tests/export/openpi_reading.py): HF_LEROBOT_HOME = ROOT's parent, repo_id = its
  name, `LeRobotDatasetMetadata(repo_id)`, `LeRobotDataset(repo_id, delta_timestamps=
  {action key: [t / fps for t in range(action_horizon)]})`, `PromptFromLeRobotTask`, then the
  repack and data transforms of every frame. Dumps "state" (N, n), "actions" (N, H, n), the
  raw observation.state and action chunk, `action_is_pad`, prompts, image shapes and masks.
- "gr00t": the faithful reading of GR00T's LeRobotEpisodeLoader (tests/export/gr00t_reading.py,
  pandas) with the export's meta/demoforge_modality_config.py; dumps every part of every episode.

The one departure from openpi's call: where torchcodec cannot load (no system FFmpeg), the
video backend is PyAV, which lerobot supports too; `video_backend` in the dump says which.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "export"))


def _isolate_hf_state(parent: str | Path) -> str:
    """A fresh, offline Hugging Face home and datasets cache under `parent` (the caller's output
    folder, so a probe killed before its cleanup leaves its cache in the test's own tmp dir)."""
    scratch = tempfile.mkdtemp(prefix="lerobot-v21-probe-", dir=parent)
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ["HF_HOME"] = os.path.join(scratch, "hf_home")
    os.environ["HF_DATASETS_CACHE"] = os.path.join(scratch, "hf_datasets")
    return scratch


def _backend() -> dict:
    try:
        import torchcodec.decoders  # noqa: F401  (loads libtorchcodec, which needs the system FFmpeg)

        return {}
    except (ImportError, RuntimeError, OSError):
        return {"video_backend": "pyav"}


def probe_lerobot(entry: dict) -> None:
    import numpy as np
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    ds = LeRobotDataset("local/x", root=entry["root"], **_backend())
    state, action, tasks = [], [], []
    for i in range(len(ds)):
        item = ds[i]
        state.append(item["observation.state"].numpy())
        action.append(item["action"].numpy())
        tasks.append(item["task"])
    np.savez(entry["out"], state=np.stack(state), action=np.stack(action), tasks=np.array(tasks, dtype=str),
             meta=np.array(json.dumps({"len": len(ds), "num_episodes": ds.num_episodes, "fps": ds.fps,
                                       "video_backend": ds.video_backend})))


def probe_openpi(entry: dict) -> None:
    import numpy as np
    from lerobot.datasets import lerobot_dataset

    import openpi_reading

    root = Path(entry["root"])
    lerobot_dataset.HF_LEROBOT_HOME = root.parent  # what $HF_LEROBOT_HOME sets at import
    mod = openpi_reading.load_config_module(root / "meta/openpi/demoforge_config.py", root.parent)
    cfg = mod.CONFIGS[0]
    data_config = cfg.data.create(cfg.assets_dirs, cfg.model)
    if data_config.norm_stats is None:
        raise FileNotFoundError(f"the config found no norm_stats.json under {cfg.data.assets}")
    horizon = cfg.model.action_horizon
    meta = lerobot_dataset.LeRobotDatasetMetadata(data_config.repo_id)
    ds = lerobot_dataset.LeRobotDataset(
        data_config.repo_id,
        delta_timestamps={key: [t / meta.fps for t in range(horizon)] for key in data_config.action_sequence_keys},
        **_backend(),
    )
    prompt = openpi_reading.PromptFromLeRobotTask(meta.tasks)
    out: dict[str, list] = {k: [] for k in ("state", "actions", "raw_state", "raw_action", "is_pad", "prompt")}
    shapes, masks = set(), set()
    for i in range(len(ds)):
        item = prompt(ds[i])
        out["raw_state"].append(item["observation.state"].numpy().copy())
        out["raw_action"].append(item["action"].numpy().copy())
        out["is_pad"].append(item["action_is_pad"].numpy())
        sample = openpi_reading.training_sample(data_config, item)
        out["state"].append(np.asarray(sample["state"]))
        out["actions"].append(np.asarray(sample["actions"]))
        out["prompt"].append(sample["prompt"])
        shapes.add(json.dumps({k: [list(v.shape), str(v.dtype)] for k, v in sample["image"].items()}))
        masks.add(json.dumps({k: bool(v) for k, v in sample["image_mask"].items()}))
    arrays = {k: np.stack(v) if k != "prompt" else np.array(v, dtype=str) for k, v in out.items()}
    arrays["meta"] = np.array(json.dumps({
        "len": len(ds), "num_episodes": ds.num_episodes, "fps": ds.fps, "video_backend": ds.video_backend,
        "repo_id": data_config.repo_id, "root": str(ds.root), "horizon": horizon,
        "norm_stats_keys": sorted(data_config.norm_stats), "image_shapes": sorted(shapes), "image_masks": sorted(masks),
        "delta_mask": list(mod.DELTA_ACTION_MASK or []),
    }))
    np.savez(entry["out"], **arrays)


def probe_gr00t(entry: dict) -> None:
    import numpy as np

    import gr00t_reading

    root = Path(entry["root"])
    cfg = gr00t_reading.load_modality_config(root / "meta/demoforge_modality_config.py")
    n = len((root / "meta/episodes.jsonl").read_text().splitlines())
    arrays, backends, frames = {}, set(), {}
    for idx in range(n):
        ep = gr00t_reading.episode(root, cfg, idx)
        backends.add(ep.video_backend)
        for key, values in ep.columns.items():
            if key.startswith("video."):
                frames[f"{idx}/{key}"] = [len(values), list(values[0].shape)]
            elif key.startswith("language."):
                arrays[f"{idx}/{key}"] = np.array(values, dtype=str)
            else:
                arrays[f"{idx}/{key}"] = np.stack(values)
    stats = gr00t_reading.dataset_statistics(root, cfg)
    arrays["meta"] = np.array(json.dumps({
        "episodes": n, "video_backends": sorted(backends), "frames": frames,
        "stats_valid": gr00t_reading.stats_valid(root),
        "statistics": {m: {g: {k: list(np.shape(v)) for k, v in d.items()} for g, d in groups.items()}
                       for m, groups in stats.items()},
        "relative": [k for k, a in zip(cfg["action"].modality_keys, cfg["action"].action_configs)
                     if a.rep == gr00t_reading.ActionRepresentation.RELATIVE],
        "horizon": len(cfg["action"].delta_indices),
    }))
    np.savez(entry["out"], **arrays)


PROBES = {"lerobot": probe_lerobot, "openpi": probe_openpi, "gr00t": probe_gr00t}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} SPEC.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(argv[1]).read_text())
    scratch = _isolate_hf_state(Path(argv[1]).resolve().parent)
    try:
        for entry in spec:
            try:
                PROBES[entry["kind"]](entry)
            except Exception:
                Path(entry["out"] + ".error").write_text(traceback.format_exc())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
