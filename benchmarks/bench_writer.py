"""Writer throughput: demoforge's DatasetWriter against the real lerobot 0.6.1, same run.

    make bench                      # sets DEMOFORGE_LEROBOT_PYTHON
    python benchmarks/bench_writer.py [--episodes 10] [--length 300] [--codec av1|h264] [--frame-api]
                                      [--repeat-video 3]

Both sides write the same synthetic episodes (observation.state and action: 8 float32;
cameras: two 96x96 and one 224x224; see _synthetic.py) with the same encoder settings:
lerobot 0.6.1's default (libsvtav1, yuv420p, g=2, crf=30, preset=12, fast-decode=0),
each through its own PyAV build (both builds' SVT-AV1 and x264 versions are printed).
Each side runs in a fresh subprocess and times itself from the first writer call to
the end of finalize(), excluding interpreter start-up, imports and data generation;
wall time gives frames/s (the headline), CPU time of the process and its children is
printed beside it because it is far steadier on a shared machine.
lerobot runs twice: as `lerobot-record` configures it by default (PNG staging, 4 image
threads per camera) and with `streaming_encoding=True`; ratios are taken against the
FASTER of the two; --repeat-video N runs every side N times, interleaved, and compares
medians. A third side encodes the same frames with the encoder alone (PyAV, the writer's encoder
options and threads, nothing else): `writer: N.NNx the encoder alone (CPU per frame)` is what
the writer adds on top of the encoding it cannot avoid (goal <= 1.15x). Then state only (no cameras; runs this short are noisy, so each side
runs --repeat-state times, interleaved, and the medians are compared). Then demoforge's
peak RSS for a few vs many episodes (smaller frames, same per-episode size), which must
not grow.
The last line is the headline ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from _machine import describe, encoder_build, load  # benchmarks/_machine.py: this script's folder is on sys.path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TARGET_VIDEO = 5.0
TARGET_STATE = 3.0
TARGET_OVER_ENCODER = 1.15  # the writer's CPU per frame against the encoder alone on the same frames


def _cpu_s() -> float:
    """CPU time of this process and its reaped children [s]: steadier than wall time on a shared machine."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def demoforge_worker(spec: dict) -> dict:
    """Runs in a subprocess of demoforge's python; mirrors _lerobot_write.main."""
    sys.path.insert(0, str(HERE))
    import _synthetic

    from demoforge.dataset import DatasetWriter, Feature, VideoSettings

    cameras = _synthetic.camera_shapes(spec["cameras"])
    features = {
        "observation.state": Feature("float32", (_synthetic.STATE_DIM,)),
        "action": Feature("float32", (_synthetic.STATE_DIM,)),
    }
    for key, shape in cameras.items():
        features[key] = Feature("video", shape, names=["height", "width", "channels"])
    if spec.get("codec", "av1") == "h264":
        video = VideoSettings(codec="h264", crf=23, gop_s=0.25)
    else:
        video = VideoSettings.lerobot_default()
    elapsed = cpu = 0.0
    t0, c0 = time.perf_counter(), _cpu_s()
    writer = DatasetWriter.create(
        spec["root"], fps=_synthetic.FPS, features=features, robot_type="bench", video=video
    )
    elapsed += time.perf_counter() - t0
    cpu += _cpu_s() - c0
    frames = 0
    for ep in range(spec["episodes"]):
        columns = _synthetic.episode(spec["seed"], ep, spec["length"], cameras)
        task = f"task {ep % 3}"
        t0, c0 = time.perf_counter(), _cpu_s()
        if spec.get("api") == "frame":
            for t in range(spec["length"]):
                writer.add_frame({key: values[t] for key, values in columns.items()}, task=task)
            writer.save_episode()
        else:
            writer.add_episode(columns, task=task)
        elapsed += time.perf_counter() - t0
        cpu += _cpu_s() - c0
        frames += spec["length"]
        del columns
    t0, c0 = time.perf_counter(), _cpu_s()
    writer.finalize()
    elapsed += time.perf_counter() - t0
    cpu += _cpu_s() - c0
    return {
        "seconds": elapsed,
        "cpu_seconds": cpu,
        "frames": frames,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "encoder": video.codec_options(_synthetic.FPS, *next(iter(cameras.values()))[:2]) if cameras else None,
    }


def encoder_worker(spec: dict) -> dict:
    """The encoder alone on the same frames: per camera one PyAV stream with the writer's encoder,
    options (threads included) and pixel format, RGB frames handed over as PyAV converts them, no
    tables, statistics or metadata: the floor a writer's CPU per frame is measured against."""
    sys.path.insert(0, str(HERE))
    from fractions import Fraction

    import av
    import _synthetic

    from demoforge.dataset import VideoSettings

    cameras = _synthetic.camera_shapes(spec["cameras"])
    video = VideoSettings(codec="h264", crf=23, gop_s=0.25) if spec.get("codec", "av1") == "h264" \
        else VideoSettings.lerobot_default()
    root = Path(spec["root"])
    root.mkdir(parents=True, exist_ok=True)
    elapsed = cpu = 0.0
    t0, c0 = time.perf_counter(), _cpu_s()
    outs = {}
    for n, (key, (h, w, _)) in enumerate(cameras.items()):
        container = av.open(str(root / f"{n}.mp4"), mode="w", format="mp4")
        stream = container.add_stream(video.encoder, rate=_synthetic.FPS, options=video.codec_options(_synthetic.FPS, h, w))
        stream.width, stream.height, stream.pix_fmt = w, h, video.pix_fmt
        stream.time_base = stream.codec_context.time_base = Fraction(1, _synthetic.FPS)
        outs[key] = (container, stream)
    elapsed += time.perf_counter() - t0
    cpu += _cpu_s() - c0
    frames = 0
    for ep in range(spec["episodes"]):
        columns = _synthetic.episode(spec["seed"], ep, spec["length"], cameras)
        t0, c0 = time.perf_counter(), _cpu_s()
        for key, (container, stream) in outs.items():
            for image in columns[key]:
                for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                    container.mux(packet)
        elapsed += time.perf_counter() - t0
        cpu += _cpu_s() - c0
        frames += spec["length"]
        del columns
    t0, c0 = time.perf_counter(), _cpu_s()
    for container, stream in outs.values():
        for packet in stream.encode():
            container.mux(packet)
        container.close()
    elapsed += time.perf_counter() - t0
    cpu += _cpu_s() - c0
    return {"seconds": elapsed, "cpu_seconds": cpu, "frames": frames,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}


def _lerobot_python() -> str:
    python = os.environ.get("DEMOFORGE_LEROBOT_PYTHON")
    if python:
        return python
    out = subprocess.run(["bash", str(REPO / "scripts" / "lerobot-venv.sh")], check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


def _run(argv: list[str], label: str, *, own_env: bool) -> dict:
    """Run a writer child; `own_env`: a venv of its own, which must not see this one's PYTHONPATH
    (demoforge's child keeps it, so a PYTHONPATH naming a checkout benchmarks that checkout)."""
    env = {k: v for k, v in os.environ.items() if not own_env or k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.setdefault("SVT_LOG", "1")
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{label} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_demoforge(spec: dict) -> dict:
    return _run([sys.executable, __file__, "--worker", json.dumps(spec)], "demoforge writer", own_env=False)


def run_lerobot(python: str, spec: dict) -> dict:
    return _run([python, str(HERE / "_lerobot_write.py"), json.dumps(spec)], f"lerobot writer ({spec['mode']})",
                own_env=True)


def _fps(result: dict) -> float:
    return result["frames"] / result["seconds"]


def _median(runs: list[dict]) -> dict:
    return sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]


def _spread(runs: list[dict]) -> str:
    seconds = [r["seconds"] for r in runs]
    return f"  (runs {min(seconds):.2f}-{max(seconds):.2f} s)" if len(runs) > 1 else ""


def _cpu_per_frame_ms(result: dict) -> float:
    return 1000.0 * result["cpu_seconds"] / result["frames"]


def _row(label: str, result: dict) -> str:
    return (f"  {label:<30} {result['frames']:>6} frames {result['seconds']:>7.2f} s "
            f"{_fps(result):>8.1f} frames/s  CPU {_cpu_per_frame_ms(result):>6.2f} ms/frame  "
            f"peak RSS {result['peak_rss_mb']:>5.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--length", type=int, default=300, help="frames per episode")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memory-episodes", default="10,200", help="episode counts for the RSS check")
    parser.add_argument("--memory-length", type=int, default=60, help="frames per episode in the RSS check")
    parser.add_argument("--codec", choices=("av1", "h264"), default="av1",
                        help="av1: lerobot's default settings; h264: demoforge's default (crf 23, g 8, bf 0)")
    parser.add_argument("--repeat-state", type=int, default=3,
                        help="state-only runs per side (short, so the median of several is used)")
    parser.add_argument("--repeat-video", type=int, default=1,
                        help="runs per side with video, interleaved; medians are compared (a shared machine's load "
                             "moves single runs by 20%% or more)")
    parser.add_argument("--frame-api", action="store_true", help="also time demoforge's add_frame path")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        spec = json.loads(args.worker)
        print(json.dumps(encoder_worker(spec) if spec.get("api") == "encoder" else demoforge_worker(spec)))
        return
    print(describe(), flush=True)

    python = _lerobot_python()
    scratch = Path(tempfile.mkdtemp(prefix="bench-writer-"))
    try:
        base = {"episodes": args.episodes, "length": args.length, "seed": args.seed, "codec": args.codec}
        print(f"writer benchmark: {args.episodes} episodes x {args.length} frames at 30 fps, "
              "state 8 + action 8 float32; cameras 2 x 96x96 + 1 x 224x224")
        if args.codec == "av1":
            print("encoder (both): libsvtav1 yuv420p g=2 crf=30 preset=12 fast-decode=0 (lerobot 0.6.1 default)")
        else:
            print("encoder (both): libx264 yuv420p g=8 crf=23, default preset (demoforge's default settings)")
        # Same settings, but each side's own PyAV build: the encoder libraries can differ in version.
        print(f"encoder build, demoforge: {encoder_build()}")
        print(f"encoder build, lerobot:   {encoder_build(python)}", flush=True)

        # Interleaved rounds: load from other work on a shared machine falls on every side alike.
        rounds = max(1, args.repeat_video)
        print("with video:" + (f" median of {rounds} interleaved runs each" if rounds > 1 else ""), flush=True)
        sides = {"demoforge add_episode": lambda r: run_demoforge(
            {**base, "cameras": "bench", "root": str(scratch / f"df_video_{r}")})}
        sides["encoder alone"] = lambda r: run_demoforge(
            {**base, "cameras": "bench", "api": "encoder", "root": str(scratch / f"enc_{r}")})
        if args.frame_api:
            sides["demoforge add_frame"] = lambda r: run_demoforge(
                {**base, "cameras": "bench", "api": "frame", "root": str(scratch / f"df_frame_{r}")})
        for mode in ("record", "streaming"):
            sides[f"lerobot ({mode})"] = lambda r, mode=mode: run_lerobot(
                python, {**base, "cameras": "bench", "mode": mode, "root": str(scratch / f"lr_video_{mode}_{r}")})
        runs: dict[str, list[dict]] = {label: [] for label in sides}
        for r in range(rounds):
            for label, run in sides.items():
                runs[label].append(run(r))
                if rounds > 1:
                    print(f"    round {r + 1}: " + _row(label, runs[label][-1]).strip(), flush=True)
        for label, results in runs.items():
            print(_row(label, _median(results)) + _spread(results))
        df_video = _median(runs["demoforge add_episode"])
        lr_video = {mode: _median(runs[f"lerobot ({mode})"]) for mode in ("record", "streaming")}
        best_mode = max(lr_video, key=lambda m: _fps(lr_video[m]))
        ratio_video = _fps(df_video) / _fps(lr_video[best_mode])
        for mode, result in lr_video.items():
            print(f"  ratio demoforge / lerobot ({mode}): {_fps(df_video) / _fps(result):.2f}x frames/s, "
                  f"{_cpu_per_frame_ms(result) / _cpu_per_frame_ms(df_video):.2f}x less CPU per frame")
        floor = _median(runs["encoder alone"])
        over_encoder = _cpu_per_frame_ms(df_video) / _cpu_per_frame_ms(floor)
        print(f"  writer: {over_encoder:.2f}x the encoder alone (CPU per frame; "
              f"{_cpu_per_frame_ms(df_video):.2f} against {_cpu_per_frame_ms(floor):.2f} ms; target <= "
              f"{TARGET_OVER_ENCODER:g}x)")

        print(f"state only (no cameras), median of {args.repeat_state} runs each, interleaved:")
        df_runs, lr_runs = [], []
        for r in range(args.repeat_state):
            df_runs.append(run_demoforge({**base, "cameras": "none", "root": str(scratch / f"df_state_{r}")}))
            lr_runs.append(run_lerobot(python, {**base, "cameras": "none", "mode": "record",
                                                "root": str(scratch / f"lr_state_{r}")}))
        df_state, lr_state = _median(df_runs), _median(lr_runs)
        print(_row("demoforge add_episode", df_state) + _spread(df_runs))
        print(_row("lerobot", lr_state) + _spread(lr_runs))
        ratio_state = _fps(df_state) / _fps(lr_state)
        print(f"  ratio demoforge / lerobot: {ratio_state:.2f}x frames/s, "
              f"{_cpu_per_frame_ms(lr_state) / _cpu_per_frame_ms(df_state):.2f}x less CPU per frame")

        counts = [int(n) for n in args.memory_episodes.split(",")]
        print(f"demoforge peak RSS vs episode count ({args.memory_length} frames/episode, one 64x64 camera):")
        rss = {}
        for n in counts:
            result = run_demoforge({"episodes": n, "length": args.memory_length, "seed": args.seed,
                                    "cameras": "small", "root": str(scratch / f"df_mem_{n}")})
            rss[n] = result["peak_rss_mb"]
            print(_row(f"{n} episodes", result))
        growth = rss[counts[-1]] - rss[counts[0]]
        print(f"  peak RSS growth {counts[0]} -> {counts[-1]} episodes: {growth:+.1f} MB")

        verdict_v = "met" if ratio_video >= TARGET_VIDEO else f"MISSED by {TARGET_VIDEO / ratio_video:.2f}x"
        verdict_s = "met" if ratio_state >= TARGET_STATE else f"MISSED by {TARGET_STATE / ratio_state:.2f}x"
        print(f"at the end: {load()}")
        print(f"headline: demoforge/lerobot throughput {ratio_video:.2f}x with {args.codec} video (vs lerobot {best_mode}; "
              f"target {TARGET_VIDEO:g}x {verdict_v}), {ratio_state:.2f}x state only "
              f"(target {TARGET_STATE:g}x {verdict_s}); writer {over_encoder:.2f}x the encoder alone (CPU per frame)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
