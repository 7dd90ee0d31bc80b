"""Write the benchmark episodes with the REAL lerobot 0.6.1 and time it from inside.

Run by bench_writer.py under the lerobot venv's python (never imported by demoforge):

    python _lerobot_write.py '{"root": ..., "episodes": 10, "length": 300, "cameras": "bench",
                               "mode": "record", "seed": 0}'

The clock covers LeRobotDataset.create + add_frame + save_episode + finalize and nothing
else: interpreter start-up, imports and the synthetic data generation are outside it.
Modes: `record` is what `lerobot-record` does out of the box (PNG staging through
4 image-writer threads per camera, then one encode per episode and camera); `streaming`
is its `--dataset.streaming_encoding=true` path (frames go straight to the encoder).
Encoder settings are lerobot's defaults (libsvtav1, yuv420p, g=2, crf=30, preset=12,
fast-decode=0) unless `codec` asks for h264. Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path


def _cpu_s() -> float:
    """CPU time of this process and its reaped children [s]: steadier than wall time on a shared machine."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _isolate_hf_state() -> None:
    scratch = tempfile.mkdtemp(prefix="lerobot-bench-")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ["HF_HOME"] = os.path.join(scratch, "hf_home")
    os.environ["HF_DATASETS_CACHE"] = os.path.join(scratch, "hf_datasets")
    os.environ["HF_LEROBOT_HOME"] = os.path.join(scratch, "lerobot_home")
    os.environ.setdefault("SVT_LOG", "1")


def main(spec: dict) -> dict:
    _isolate_hf_state()
    sys.path.insert(0, str(Path(__file__).parent))
    import logging

    import _synthetic
    from lerobot.configs.video import RGBEncoderConfig
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    logging.disable(logging.WARNING)
    cameras = _synthetic.camera_shapes(spec["cameras"])
    features = {
        "observation.state": {"dtype": "float32", "shape": (_synthetic.STATE_DIM,), "names": None},
        "action": {"dtype": "float32", "shape": (_synthetic.STATE_DIM,), "names": None},
    }
    for key, shape in cameras.items():
        features[key] = {"dtype": "video", "shape": shape, "names": ["height", "width", "channels"]}
    if spec.get("codec", "av1") == "h264":
        # demoforge disables B-frames for h264 (pts == dts); lerobot gets the same option.
        encoder = RGBEncoderConfig(vcodec="h264", crf=23, g=round(_synthetic.FPS * 0.25), preset=None,
                                   extra_options={"bf": 0})
    else:
        encoder = RGBEncoderConfig()  # lerobot's default: libsvtav1, crf 30, g 2, preset 12
    streaming = spec["mode"] == "streaming"
    threads = 0 if streaming else 4 * len(cameras)  # lerobot-record: 4 per camera

    elapsed = cpu = 0.0
    t0, c0 = time.perf_counter(), _cpu_s()
    ds = LeRobotDataset.create(
        repo_id="bench/lerobot", fps=_synthetic.FPS, features=features, root=spec["root"],
        robot_type="bench", use_videos=True, image_writer_threads=threads,
        rgb_encoder=encoder, streaming_encoding=streaming,
    )
    elapsed += time.perf_counter() - t0
    cpu += _cpu_s() - c0
    frames = 0
    for ep in range(spec["episodes"]):
        columns = _synthetic.episode(spec["seed"], ep, spec["length"], cameras)
        task = f"task {ep % 3}"
        t0, c0 = time.perf_counter(), _cpu_s()
        for t in range(spec["length"]):
            frame = {key: values[t] for key, values in columns.items()}
            frame["task"] = task
            ds.add_frame(frame)
        ds.save_episode()
        elapsed += time.perf_counter() - t0
        cpu += _cpu_s() - c0
        frames += spec["length"]
    t0, c0 = time.perf_counter(), _cpu_s()
    ds.finalize()
    elapsed += time.perf_counter() - t0
    cpu += _cpu_s() - c0
    return {
        "seconds": elapsed,
        "cpu_seconds": cpu,
        "frames": frames,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "encoder": encoder.get_codec_options(as_strings=True) | {"vcodec": encoder.vcodec},
    }


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
