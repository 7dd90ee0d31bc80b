"""Doctor throughput and memory: seconds per 1000 frames (state-only, and with one camera)
and peak RSS of a fresh doctor process on 100 vs 1000 episodes.

    .venv/bin/python benchmarks/bench_doctor.py [--length 100] [--work DIR]

The datasets are written once into --work (kept between runs). Peak RSS is VmHWM of a
child process that only runs the doctor, so the writer's memory does not count. The last
line is the headline: peak RSS at 1000 episodes over peak RSS at 100 (1.0 = flat).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _synthetic import FPS, camera_shapes, episode  # noqa: E402

from demoforge.dataset import DatasetWriter, Feature, VideoSettings  # noqa: E402
from demoforge.doctor import DoctorConfig, run_doctor  # noqa: E402
from _machine import describe  # noqa: E402  # benchmarks/_machine.py: this script's folder is on sys.path

PEAK_RSS = """
import re, sys
from demoforge.doctor import run_doctor
run_doctor(sys.argv[1])
print(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1))
"""


def build(root: Path, episodes: int, length: int, cameras: str) -> Path:
    if (root / "meta/info.json").is_file():
        return root
    shapes = camera_shapes(cameras)
    feats = {"observation.state": Feature("float32", (8,)), "action": Feature("float32", (8,))}
    feats.update({k: Feature("video", s) for k, s in shapes.items()})
    with DatasetWriter.create(root, fps=FPS, features=feats, video=VideoSettings(codec="h264", preset="veryfast")) as w:
        for e in range(episodes):
            w.add_episode(episode(0, e, length, shapes), task="bench")
    return root


def seconds_per_kframe(root: Path, repeats: int, config: DoctorConfig | None = None) -> tuple[float, int]:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        result = run_doctor(root, config=config)
        best = min(best, time.perf_counter() - t)
    frames = sum(s.length for s in result.scan.episodes)
    return best / frames * 1000, frames


def peak_rss_mb(root: Path) -> float:
    proc = subprocess.run([sys.executable, "-c", PEAK_RSS, str(root)], check=True, capture_output=True, text=True)
    return int(proc.stdout.split()[-1]) / 1024


def main() -> None:
    print(describe(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=100, help="frames per episode")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "demoforge-bench-doctor")
    args = parser.parse_args()
    work = args.work / f"len{args.length}"
    t = time.perf_counter()
    small = build(work / "state-100", 100, args.length, "none")
    large = build(work / "state-1000", 1000, args.length, "none")
    video = build(work / "video-50", 50, args.length, "small")
    print(f"datasets ready in {time.perf_counter() - t:.1f} s under {work}")
    decode = DoctorConfig(decode_video=True)
    for name, root, cfg in (("state-only, 100 episodes", small, None), ("state-only, 1000 episodes", large, None),
                            ("one 64x64 camera, 50 episodes", video, None),
                            ("same, --decode-video", video, decode)):
        spk, frames = seconds_per_kframe(root, args.repeats, cfg)
        print(f"{name:32s} {frames:7d} frames  {spk * 1000:8.2f} ms per 1000 frames  "
              f"({1000 / spk:,.0f} frames/s)")
    rss_small, rss_large = peak_rss_mb(small), peak_rss_mb(large)
    print(f"peak RSS of a doctor process: 100 episodes {rss_small:.0f} MB, 1000 episodes {rss_large:.0f} MB")
    print(f"peak RSS ratio 1000/100 episodes: {rss_large / rss_small:.2f}x")


if __name__ == "__main__":
    main()
