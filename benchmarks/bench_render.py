"""Render stage throughput against the renderer alone on the same frames, same run.

    python benchmarks/bench_render.py [--episodes 6] [--look plain] [--repeats 2]

Source: --episodes executed pick-and-place episodes (`demoforge generate`, one problem,
60 Hz, a few hundred ticks each). Then, each timed as wall-clock seconds and turned into
frames/s (one frame = both cameras):

1. the renderer alone: for every tick of every episode, the recorded state is set outside
   the timer, and only drawing and reading back the two 224x224 cameras (front, wrist) is
   timed (the look model and GL context exist beforehand);
2. the whole render stage, `render_dataset` with one worker: rebuild each episode's
   model, draw the look, replay every tick (set state, no stepping), render both cameras,
   encode both videos (x264, on the writer's per-camera threads), write the parquet and
   videos, finalize, copy the metadata.

3. the renderer alone again under the same look without shadows (`shadow_map_px: 0`): the
   difference to 1. is what the key light's shadow map costs per frame.

The three alternate --repeats times and the best of each counts (a shared machine is noisy);
CPU time per frame (process time, all threads) is printed beside each for scale.
Target (issue 39 item 3): stage >= 0.85x the renderer alone. The last line is the headline ratio.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import tempfile
import time
from pathlib import Path

from demoforge.dataset import open_dataset
from demoforge.execute import generate
from demoforge.raw.schema import SIM_STATE
from demoforge.render import (
    CameraRecorder, RenderConfig, draw_look, look_seed, look_targets, parse_look_arg, render_dataset,
)
from demoforge.replay import episode_scene
from demoforge.sim import restore, state_size
from demoforge.tasks import generate_family, write_tasks
from _machine import describe  # benchmarks/_machine.py: this script's folder is on sys.path

CAMERAS = ("front", "wrist")
TARGET = 0.85


def make_source(folder: Path, episodes: int) -> Path:
    paths = write_tasks(generate_family("pnp", count=1, seed=11), folder / "tasks")
    pddl = [p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl"]
    return generate(pddl, folder / "run", episodes_per_problem=episodes, envs=1, seed=4).roots["success"]


def renderer_only(source: Path, config: RenderConfig) -> tuple[int, float, float]:
    """(frames, wall-clock and CPU seconds spent drawing and reading back both cameras)."""
    reader = open_dataset(source)
    request = config.looks[0]
    frames, seconds, cpu, recorder = 0, 0.0, 0.0, None
    for episode in reader.episode_indices:
        scene = episode_scene(source, episode)
        draw = draw_look(request.look, look_seed(config.seed, request.look.name, episode, 0), look_targets(scene))
        if recorder is None:
            recorder = CameraRecorder(scene, draw, CAMERAS)
        else:
            recorder.bind(scene, draw)
        states = reader.read_episode(episode, [SIM_STATE])[SIM_STATE]
        n = state_size(recorder.scene.model)
        for row in states:
            restore(recorder.scene.model, recorder.scene.data, row[:n])
            start, cpu0 = time.perf_counter(), time.process_time()
            recorder.render()
            seconds += time.perf_counter() - start
            cpu += time.process_time() - cpu0
            frames += 1
    recorder.close()
    return frames, seconds, cpu


def whole_stage(source: Path, out: Path, config: RenderConfig) -> tuple[int, float, float]:
    shutil.rmtree(out, ignore_errors=True)
    start, cpu = time.perf_counter(), time.process_time()
    summary = render_dataset(source, out, config, workers=1)
    return summary.frames, time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    print(describe(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=6)
    parser.add_argument("--look", default="plain", help="look file or shipped name (one copy per episode)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    config = RenderConfig(looks=(parse_look_arg(args.look),), cameras=CAMERAS)
    flat = dataclasses.replace(config.looks[0], look=dataclasses.replace(config.looks[0].look, shadow_map_px=0))
    no_shadows = dataclasses.replace(config, looks=(flat,))
    with tempfile.TemporaryDirectory(prefix="bench_render-") as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        source = make_source(tmp, args.episodes)
        print(f"source: {open_dataset(source).num_episodes} episodes, {open_dataset(source).num_frames} ticks "
              f"(generated in {time.perf_counter() - t0:.1f} s); look {args.look!r}; cameras {list(CAMERAS)} at "
              f"{config.looks[0].look.width}x{config.looks[0].look.height}")
        best_render, best_stage, best_flat = 0.0, 0.0, 0.0
        for r in range(args.repeats):
            n, s, c = renderer_only(source, config)
            best_render = max(best_render, n / s)
            print(f"  repeat {r}: renderer alone {n} frames in {s:.2f} s = {n / s:.1f} frames/s "
                  f"(CPU {1000 * c / n:.2f} ms/frame, all threads)")
            n, s, c = renderer_only(source, no_shadows)
            best_flat = max(best_flat, n / s)
            print(f"  repeat {r}: renderer alone, no shadows {n} frames in {s:.2f} s = {n / s:.1f} frames/s "
                  f"(CPU {1000 * c / n:.2f} ms/frame, all threads)")
            n, s, c = whole_stage(source, tmp / "out", config)
            best_stage = max(best_stage, n / s)
            print(f"  repeat {r}: whole stage    {n} frames in {s:.2f} s = {n / s:.1f} frames/s "
                  f"(CPU {1000 * c / n:.2f} ms/frame, all threads)")
    shadow = config.looks[0].look.shadow_map_px
    print(f"renderer alone without shadows (best): {best_flat:.1f} frames/s; the look's shadow map "
          f"({shadow} px) costs {1000 / best_render - 1000 / best_flat:.2f} ms per frame "
          f"({best_flat / best_render:.2f}x the time)")
    print(f"renderer alone (best): {best_render:.1f} frames/s (2 cameras)")
    print(f"whole stage (best):    {best_stage:.1f} frames/s (replay + render + encode + write)")
    print(f"stage / renderer = {best_stage / best_render:.2f} (target >= {TARGET})")


if __name__ == "__main__":
    main()
