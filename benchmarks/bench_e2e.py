"""The whole pipeline, end to end: successful rendered episodes per core-hour (issue 21).

One `demoforge run` on stack_three: tasks -> scenes -> execute -> render (the plain look, two
cameras, front and side, 224x224) -> merge -> annotate -> bake (joint_target at 30 Hz) ->
doctor, into a fresh folder. Reported:

- successful rendered episodes per core-hour, two ways: by the wall clock times the machine's
  cores (what a user waiting on this machine gets; the headline), and by the CPU time the
  run used (user + system of this process and its children: steadier on a shared machine);
- each stage's share of the wall time, and the frames rendered against the frames the
  baked dataset keeps (a run that bakes below the native rate renders only the ticks the bake
  keeps, pipeline.baked_render; before that, render replayed every native 60 Hz tick).

`--render-schedule coupled,pipelined` runs each schedule (`demoforge run --render-schedule`), one
after the other within each repeat (so both see the same machine), and prints each one's figures
and wall time; the headline then compares them (under pipelined the execute stage's time includes
the render).

Run: python benchmarks/bench_e2e.py [--problems 5] [--episodes 4] [--workers auto] [--look plain] [--repeat 1]
                                    [--render-schedule coupled[,pipelined]]
The last line is the headline.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("MUJOCO_GL", "egl")

from demoforge.dataset import open_dataset  # noqa: E402
from demoforge.pipeline import config_from_dict, run_pipeline  # noqa: E402
from _machine import cpu_s, describe  # noqa: E402  # benchmarks/_machine.py: this script's folder is on sys.path

CAMERAS = ["front", "side"]
BAKE_HZ = 30


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
    ap.add_argument("--problems-per-process", type=int, default=None,
                    help="problems a generate work item holds at most (default: the run's, 8); the pipelined "
                         "schedule renders a problem once its whole item is generated, so 1 lets it start soonest")
    ap.add_argument("--render-schedule", default="coupled",
                    help="schedules to run, comma-separated: coupled, pipelined (each once per repeat)")
    args = ap.parse_args()
    schedules = [s.strip() for s in args.render_schedule.split(",") if s.strip()]
    if not schedules or len(set(schedules)) != len(schedules) or not set(schedules) <= {"coupled", "pipelined"}:
        ap.error(f"--render-schedule {args.render_schedule!r}: give coupled, pipelined or both, each once")
    if args.repeat < 1 or (args.keep is not None and (args.repeat > 1 or len(schedules) > 1)):
        ap.error("--repeat must be >= 1, and 1 with --keep (with one schedule)")
    cores = os.cpu_count() or 1
    runs: dict[str, list[tuple[float, float, float]]] = {s: [] for s in schedules}
    for k in range(args.repeat):
        for schedule in schedules:
            runs[schedule].append(_run(args, cores, k, schedule))
    figures = {}
    for schedule, rs in runs.items():
        per_core_hour = float(np.median([r[0] for r in rs]))
        per_cpu_hour = float(np.median([r[1] for r in rs]))
        wall = float(np.median([r[2] for r in rs]))
        spread = (f" (median of {len(rs)} runs: {min(r[0] for r in rs):.0f}-{max(r[0] for r in rs):.0f} and "
                  f"{min(r[1] for r in rs):.0f}-{max(r[1] for r in rs):.0f})" if len(rs) > 1 else "")
        figures[schedule] = (per_core_hour, per_cpu_hour, wall, spread)
        print(f"{schedule}: {per_core_hour:.0f} per core-hour by the wall clock, {per_cpu_hour:.0f} per CPU-hour, "
              f"{wall:.1f} s wall{spread}")
    if len(figures) == 1:
        (schedule, (per_core_hour, per_cpu_hour, _, spread)), = figures.items()
        print(f"headline: {per_core_hour:.0f} successful rendered episodes per core-hour by the wall clock "
              f"({per_cpu_hour:.0f} per CPU-hour used; render schedule {schedule}){spread}")
    else:
        (c_hour, c_cpu, c_wall, _), (p_hour, p_cpu, p_wall, _) = figures["coupled"], figures["pipelined"]
        print(f"headline: pipelined {p_hour:.0f} against coupled {c_hour:.0f} successful rendered episodes per "
              f"core-hour by the wall clock ({p_hour / c_hour:.2f}x; wall {p_wall:.1f} s against {c_wall:.1f} s; "
              f"per CPU-hour used {p_cpu:.0f} against {c_cpu:.0f})")


def _run(args, cores: int, k: int, schedule: str) -> tuple[float, float, float]:
    """One pipeline run into a fresh folder under `schedule`; prints its figures; (per core-hour,
    per CPU-hour, wall [s])."""
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench_e2e_"))
    config = config_from_dict({
        "experiment_id": "e2e", "out_dir": str(base), "family": "stack_three", "problems": args.problems,
        "episodes_per_problem": args.episodes, "workers": args.workers, "looks": [args.look],
        "cameras": CAMERAS, "control_space": "joint_target", "control_freq": BAKE_HZ, "progress": False,
        "render_schedule": schedule,
        **({} if args.problems_per_process is None else {"problems_per_process": args.problems_per_process})})
    try:
        cpu0, t0 = cpu_s(), time.perf_counter()
        result = run_pipeline(config, echo=lambda s: None)
        wall, cpu = time.perf_counter() - t0, cpu_s() - cpu0
        run = result.run_dir
        rendered = run / "render" / "success"
        successes = open_dataset(result.final).num_episodes
        native, baked = frames(rendered), frames(result.final)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    print(f"render schedule {schedule}" + (f", run {k + 1} of {args.repeat}:" if args.repeat > 1 else ":"))
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
    return per_core_hour, per_cpu_hour, wall


if __name__ == "__main__":
    main()
