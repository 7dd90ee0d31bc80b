"""Bake throughput: demoforge's streaming bake against ffmpeg doing the same video work, same run.

    python benchmarks/bench_bake.py [--seconds 175] [--width 640] [--height 480] [--rate 15]

Source: one raw episode (raw.schema columns, 7-DoF arm) of --seconds at 60 fps with
one --width x --height camera, encoded with libx264 crf 23, g = 0.25 s, preset veryfast,
no B-frames (demoforge's defaults, the preset lowered to keep the run short; every side
below uses the same settings). Then, each timed as wall-clock seconds:

1. demoforge `bake` to joint_vel at --rate Hz (decode, decimate, encode streaming, plus
   the data columns, hashing, stats, check) against `ffmpeg` decoding the same mp4,
   selecting every (60 / rate)-th frame and encoding it with the same x264 settings,
   demoforge's (one encoder thread and `cpu-independent`: what keeps its bytes reproducible)
   (target: demoforge <= 1.2x ffmpeg's time); for scale, ffmpeg again with x264's own threads;
2. the reference pipeline's way, for scale: ffmpeg writing the kept frames as PNG files,
   then a second ffmpeg encoding the PNGs;
3. demoforge's remux path (native rate, same settings: packets copied) against its
   re-encode path (native rate, crf 24: every frame decoded and encoded)
   (target: remux >= 20x faster);
4. the peak RSS of a fresh process running the joint_vel bake (streaming: it must not
   scale with the episode's decoded size).

The reference ffmpeg is the static build the `bench` extra's imageio-ffmpeg wheel bundles
(`make bench` installs it; an `ffmpeg` on PATH only when that package is missing); demoforge
uses PyAV's bundled FFmpeg, so the two x264 builds may differ: both are printed (the machine
line names PyAV's). Each side's CPU seconds are printed beside its wall time: on a shared
machine they are the steadier figure. The last line is the headline.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from demoforge.convert import BakeConfig, bake
from demoforge.dataset import DatasetWriter, Feature, VideoSettings
from demoforge.raw import schema
from demoforge.sim import ControlLaw
from _machine import cpu_s, describe, load  # benchmarks/_machine.py: this script's folder is on sys.path

FPS = 60
N_ARM = 7
SETTINGS = VideoSettings(preset="veryfast")
TARGET_FFMPEG = 1.2
TARGET_REMUX = 20.0


def write_source(root: Path, seconds: float, height: int, width: int) -> Path:
    """A raw dataset holding one long episode; frames are a sliding gradient with a moving square and noise."""
    n = int(round(seconds * FPS))
    features = schema.raw_features(n_arm=N_ARM, n_command=N_ARM, n_state=1 + 2 * N_ARM, atoms=["(holding a)"],
                                   joint_names=[f"joint{k}" for k in range(1, N_ARM + 1)])
    features["observation.images.front"] = Feature("video", (height, width, 3))
    rng = np.random.default_rng(0)
    x = np.linspace(0, 4 * np.pi, width + 600)
    base = (127 + 100 * np.sin(x)[None, :, None] * np.cos(np.linspace(0, 3, height))[:, None, None]
            * np.array([1.0, 0.7, 0.4])).astype(np.int16)
    noise = rng.integers(-12, 13, size=(8, height, width, 3), dtype=np.int16)
    t = np.arange(n) / FPS
    q = 0.3 * np.sin(np.outer(t, np.linspace(0.2, 1.0, N_ARM)))
    state = np.column_stack([q, 0.5 + 0.5 * np.sin(t)]).astype(np.float32)
    law = ControlLaw(mode="joint_position", kp=(100.0,) * N_ARM, kd=(10.0,) * N_ARM)
    with DatasetWriter.create(root, fps=FPS, features=features, video=SETTINGS) as w:
        for k in range(n):
            off = (k * 2) % 600
            img = base[:, off:off + width] + noise[k % 8]
            y, xx = (k * 3) % (height - 40), (k * 5) % (width - 40)
            img[y:y + 40, xx:xx + 40] = (230, 40, 40)
            action = state[k] + np.float32(0.01)
            w.add_frame({
                schema.STATE: state[k], schema.ACTION: action, schema.RAW_COMMAND: action,
                schema.SIM_STATE: np.concatenate([[t[k]], q[k], q[k]]), schema.SYMBOLIC_STATE: np.zeros(1, bool),
                schema.OPERATOR: np.zeros(1, np.int64), schema.PHASE: np.zeros(1, np.int64),
                "observation.images.front": np.clip(img, 0, 255).astype(np.uint8),
            }, task="bench")
        w.save_episode(extra={"outcome": "success"})
        w.write_meta_file(schema.CONTROLLER_META, law.to_json())
    return root


CPU: dict[str, float] = {}  # CPU seconds of each timed section, by label


def timed(fn, label: str | None = None) -> float:
    """Wall seconds of fn(); its CPU seconds (steadier on a shared machine) go to CPU[label]."""
    t0, c0 = time.perf_counter(), cpu_s()
    fn()
    if label:
        CPU[label] = cpu_s() - c0
    return time.perf_counter() - t0


def x264_args(fps: int, height: int, width: int, *, same_threads: bool = True) -> list[str]:
    """ffmpeg's encoder arguments for demoforge's own x264 options at `fps` (GOP, crf, preset, no
    B-frames, one thread, cpu-independent: what keeps the bake's bytes reproducible); with
    `same_threads=False` ffmpeg picks its own threads, as a user's plain ffmpeg call would."""
    opts = SETTINGS.codec_options(fps, height, width)
    if not same_threads:
        opts.pop("threads")
    return ["-c:v", "libx264", *(a for k, v in opts.items() for a in (f"-{k}", v)), "-pix_fmt", "yuv420p"]


# VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec from the forked parent's size.
PEAK_RSS = """
import re, sys
from demoforge.convert import BakeConfig, bake
bake([sys.argv[1]], sys.argv[2], BakeConfig(control_space="joint_vel", control_freq=int(sys.argv[3]),
                                           vcodec="h264", preset="veryfast"))
print(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1))
"""


def peak_rss_mb(raw: Path, out: Path, rate: int) -> float:
    proc = subprocess.run([sys.executable, "-c", PEAK_RSS, str(raw), str(out), str(rate)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"bench_bake: the peak-RSS bake failed:\n{proc.stderr[-3000:]}")
    return int(proc.stdout.split()[-1]) / 1024


def reference_ffmpeg() -> str:
    """The ffmpeg that imageio-ffmpeg bundles (the `bench` extra), else one on PATH."""
    try:
        import imageio_ffmpeg
    except ImportError:
        found = shutil.which("ffmpeg")
        if found is None:
            raise SystemExit("bench_bake: no reference ffmpeg; run `make bench` (installs the bench extra, whose "
                             "imageio-ffmpeg wheel bundles one) or `pip install imageio-ffmpeg`") from None
        return found
    return imageio_ffmpeg.get_ffmpeg_exe()


def x264_build(ffmpeg: str) -> str:
    """The x264 inside the reference ffmpeg, from the SEI text of one encoded frame."""
    proc = subprocess.run([ffmpeg, "-v", "error", "-f", "lavfi", "-i", "color=c=gray:s=64x64:d=0.04",
                           "-c:v", "libx264", "-f", "h264", "-"], capture_output=True)
    found = re.search(rb"x264 - core (\d+)(?: (r\d+))?", proc.stdout)
    if found is None:
        return "x264 unknown"
    return "x264 core " + " ".join(g.decode() for g in found.groups() if g)


def main() -> None:
    print(describe(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=175.0)
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--height", type=int, default=480)
    parser.add_argument("--rate", type=int, default=15)
    args = parser.parse_args()
    ffmpeg = reference_ffmpeg()
    version = subprocess.run([ffmpeg, "-version"], capture_output=True, text=True, check=True).stdout
    print(f"reference: {version.splitlines()[0]}, {x264_build(ffmpeg)} ({ffmpeg})", flush=True)
    stride = FPS // args.rate
    work = Path(tempfile.mkdtemp(prefix="bench_bake-"))
    try:
        t = timed(lambda: write_source(work / "raw", args.seconds, args.height, args.width))
        mp4 = next((work / "raw").glob("videos/**/*.mp4"))
        n = int(round(args.seconds * FPS))
        print(f"source: {args.seconds:.0f} s, {args.width}x{args.height} at {FPS} fps ({n} frames), "
              f"libx264 crf 23 veryfast g={SETTINGS.gop(FPS)}; written in {t:.1f} s")

        df = timed(lambda: bake([work / "raw"], work / "vel",
                                BakeConfig(control_space="joint_vel", control_freq=args.rate, vcodec="h264",
                                           preset="veryfast")), "bake")
        select = f"select=not(mod(n\\,{stride})),setpts=N/{args.rate}/TB"
        ff = timed(lambda: subprocess.run(
            [ffmpeg, "-v", "error", "-y", "-i", str(mp4), "-vf", select, "-r", str(args.rate),
             *x264_args(args.rate, args.height, args.width), str(work / "ffmpeg.mp4")], check=True), "ffmpeg")
        ff_own = timed(lambda: subprocess.run(
            [ffmpeg, "-v", "error", "-y", "-i", str(mp4), "-vf", select, "-r", str(args.rate),
             *x264_args(args.rate, args.height, args.width, same_threads=False), str(work / "ffmpeg-own.mp4")], check=True), "ffmpeg-own")
        (work / "png").mkdir()
        png = timed(lambda: (
            subprocess.run([ffmpeg, "-v", "error", "-y", "-i", str(mp4), "-vf", select, "-fps_mode", "passthrough",
                            str(work / "png" / "%06d.png")], check=True),
            subprocess.run([ffmpeg, "-v", "error", "-y", "-framerate", str(args.rate), "-i",
                            str(work / "png" / "%06d.png"), *x264_args(args.rate, args.height, args.width), str(work / "png.mp4")],
                           check=True)))
        kept = -(-n // stride)
        print(f"joint_vel at {args.rate} Hz ({kept} frames out):")
        print(f"  demoforge bake                {df:8.2f} s  {n / df:8.1f} source frames/s  CPU {CPU['bake']:7.2f} s")
        print(f"  ffmpeg decode-select-encode   {ff:8.2f} s  {n / ff:8.1f} source frames/s  CPU {CPU['ffmpeg']:7.2f} s")
        print(f"  ffmpeg, its own x264 threads  {ff_own:8.2f} s  {n / ff_own:8.1f} source frames/s  "
              f"CPU {CPU['ffmpeg-own']:7.2f} s  (for scale: x264 with frame threads)")
        print(f"  ffmpeg via PNG staging        {png:8.2f} s  {n / png:8.1f} source frames/s")
        ratio = df / ff
        print(f"  demoforge / ffmpeg time: {ratio:.2f}x (target <= {TARGET_FFMPEG}x "
              f"{'met' if ratio <= TARGET_FFMPEG else 'MISSED'}); CPU {CPU['bake'] / CPU['ffmpeg']:.2f}x; "
              f"PNG staging / demoforge: {png / df:.2f}x")

        remux = timed(lambda: bake([work / "raw"], work / "remux", BakeConfig(control_space="joint_pos", vcodec="h264",
                                                                                preset="veryfast")))
        again = BakeConfig(control_space="joint_pos", vcodec="h264", preset="veryfast", crf=24)
        enc = timed(lambda: bake([work / "raw"], work / "enc", again))
        speedup = enc / remux
        print(f"native rate, joint_pos ({n} frames out):")
        print(f"  remux (packets copied)        {remux:8.2f} s")
        print(f"  re-encode (crf 24)            {enc:8.2f} s")
        rss = peak_rss_mb(work / "raw", work / "rss", args.rate)
        decoded = n * args.width * args.height * 3 / 2**20
        print(f"peak RSS of a process baking joint_vel at {args.rate} Hz: {rss:.0f} MB "
              f"(the episode's decoded RGB frames: {decoded:.0f} MB)")
        print(f"at the end: {load()}")
        print(f"bake joint_vel@{args.rate}Hz {ratio:.2f}x ffmpeg's time (target <= {TARGET_FFMPEG}x); "
              f"remux {speedup:.1f}x faster than re-encode (target >= {TARGET_REMUX:.0f}x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
