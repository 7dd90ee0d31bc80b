"""The whole pipeline, end to end: successful rendered episodes per core-hour (issue 21).

One `demoforge run` on stack_three: tasks -> envs -> execute -> render (the plain look, two
cameras, front and side, 224x224) -> merge -> annotate -> bake (joint_target at 30 Hz) ->
doctor, into a fresh folder. Reported:

- successful rendered episodes per core-hour, two ways: by the wall clock times the machine's
  cores (what a user waiting on this machine gets; the headline), and by the CPU time the
  run used (user + system of this process and its children: steadier on a shared machine);
- each stage's share of the wall time, and the frames rendered against the frames the
  baked dataset keeps (a run that bakes below the native rate renders only the ticks the bake
  keeps, pipeline.baked_render; before that, render replayed every native 60 Hz tick).

Run: python benchmarks/bench_e2e.py [--problems 5] [--episodes 4] [--workers auto] [--look plain] [--repeat 1]
The last line is the headline.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("MUJOCO_GL", "egl")

from demoforge.dataset import open_dataset  # noqa: E402
from demoforge.pipeline import config_from_dict, run_pipeline  # noqa: E402
from _machine import describe  # noqa: E402  # benchmarks/_machine.py: this script's folder is on sys.path

CAMERAS = ["front", "side"]
BAKE_HZ = 30


def cpu_seconds() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def frames(root: Path) -> int:
    """Frames of one camera of a dataset (its rows)."""
    return int(open_dataset(root).info.total_frames)


def main() -> None:
    print(describe(), flush=True)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=5, help="stack_three problems")
    ap.add_argument("--episodes", type=int, default=4, help="episodes per problem")
    ap.add_argument("--workers", default="auto", help="worker slots (a count or auto)")
    ap.add_argument("--look", default="plain", help="the render pass: plain, randomized or a look YAML")
    ap.add_argument("--keep", type=Path, default=None, help="write the run here and keep it (default: a temp folder)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs, one after another; the headline takes the median (one run on a shared machine "
                         "moves by 10%%)")
    args = ap.parse_args()
    if args.repeat < 1 or (args.keep is not None and args.repeat > 1):
        ap.error("--repeat must be >= 1, and 1 with --keep")
    cores = os.cpu_count() or 1
    runs = [_run(args, cores, k) for k in range(args.repeat)]
    per_core_hour = float(np.median([r[0] for r in runs]))
    per_cpu_hour = float(np.median([r[1] for r in runs]))
    spread = (f" (median of {len(runs)} runs: {min(r[0] for r in runs):.0f}-{max(r[0] for r in runs):.0f} and "
              f"{min(r[1] for r in runs):.0f}-{max(r[1] for r in runs):.0f})" if len(runs) > 1 else "")
    print(f"headline: {per_core_hour:.0f} successful rendered episodes per core-hour by the wall clock "
          f"({per_cpu_hour:.0f} per CPU-hour used){spread}")


def _run(args, cores: int, k: int) -> tuple[float, float]:
    """One pipeline run into a fresh folder; prints its figures; (per core-hour, per CPU-hour)."""
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench_e2e_"))
    config = config_from_dict({
        "experiment_id": "e2e", "out_dir": str(base), "family": "stack_three", "problems": args.problems,
        "episodes_per_problem": args.episodes, "workers": args.workers, "render_passes": [args.look],
        "cameras": CAMERAS, "bake_convention": "joint_target", "bake_control_freq": BAKE_HZ, "progress": False})
    try:
        cpu0, t0 = cpu_seconds(), time.perf_counter()
        result = run_pipeline(config, echo=lambda s: None)
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
        run = result.run_dir
        rendered = run / "render" / "success"
        successes = open_dataset(result.final).num_episodes
        native, baked = frames(rendered), frames(result.final)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    if args.repeat > 1:
        print(f"run {k + 1} of {args.repeat}:")
    print(f"{successes} successful episodes rendered ({len(CAMERAS)} cameras, 224x224, look {args.look}) and baked "
          f"at {BAKE_HZ} Hz "
          f"in {wall:.1f} s wall, {cpu:.1f} s CPU, on {cores} cores")
    print(f"frames per camera: rendered {native}, kept by the bake {baked} ({native / max(baked, 1):.1f}x rendered)")
    print("| stage | wall [s] | share |")
    print("|---|---|---|")
    for stage, s in result.seconds.items():
        print(f"| {stage} | {s:.2f} | {100 * s / wall:.0f}% |")
    per_core_hour = successes / (wall * cores / 3600)
    per_cpu_hour = successes / (cpu / 3600)
    print(f"{per_core_hour:.0f} per core-hour by the wall clock, {per_cpu_hour:.0f} per CPU-hour", flush=True)
    return per_core_hour, per_cpu_hour


if __name__ == "__main__":
    main()
