"""The pipeline: the smoke run's wall time per stage, and execution throughput with 1 and 2
local worker slots (target >= 1.7x on 2 cores), side by side in one run.

Part 1 runs `demoforge run --smoke-test --render-pass plain --bake joint_target` (one
stack_three problem, two episodes, front camera) and prints each stage's wall time; it
also warms this process, which the 1-worker run and the 2-worker run's first slot use.
Part 2 runs the execute stage alone (the local backend over `--problems` stack_three
problems, `--episodes` each, one env per slot) with 1 and then 2 worker slots into fresh
folders and compares episodes per second, then the Ray backend (a local Ray with 2 CPUs,
one task per problem) on the same 2 cores against the 2-worker local run (target >= 0.9x);
all outputs are checked byte-identical. Ray start-up is timed separately and left out.
Each run's wall time is split into its episodes (until the last item's shards are final)
and the merge of the shards, which is serial and the same for every slot count.

The default workload is 8 problems x 3 episodes: a spawned worker's start-up (about a
second) and the one-item tail do not amortize over fewer; run several sizes to see the
trend (a user runs hundreds of problems).

The last line is the headline ratio.
Run: python benchmarks/bench_pipeline.py [--problems 8] [--episodes 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

from demoforge.pipeline import config_from_dict, run_pipeline  # noqa: E402
from demoforge.pipeline.backends.local import execute_local  # noqa: E402
from demoforge.pipeline.provenance import dataset_hash  # noqa: E402
from demoforge.tasks import generate_family, write_tasks  # noqa: E402


def smoke(base: Path) -> dict[str, float]:
    config = config_from_dict({"experiment_id": "smoke", "out_dir": str(base), "smoke_test": True,
                               "render_passes": ["plain"], "bake_convention": "joint_target"})
    return run_pipeline(config, echo=lambda s: None).seconds


def execute(base: Path, name: str, pddl: list[str], episodes: int, workers: int,
            backend: str = "local") -> tuple[float, float, int, str]:
    """(wall s, s until the last item's shards were final, episodes, hash of the success split)."""
    config = config_from_dict({"experiment_id": name, "out_dir": str(base), "episodes_per_problem": episodes,
                               "envs": 1, "workers": workers, "progress": False, "backend": backend})
    config.run_dir.mkdir(parents=True)
    last_item = []

    def progress(event: tuple) -> None:
        if event[0] == "item":
            last_item[:] = [time.perf_counter()]

    start = time.perf_counter()
    if backend == "ray":
        from demoforge.pipeline.backends.ray import execute_ray

        summary = execute_ray(config, pddl, config.run_dir / "execute", progress)
    else:
        summary = execute_local(config, pddl, config.run_dir / "execute", progress)
    end = time.perf_counter()
    digest = dataset_hash(summary.roots["success"]) if summary.roots["success"] else ""
    return end - start, last_item[0] - start, summary.episodes, digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", type=int, default=8)
    parser.add_argument("--episodes", type=int, default=3)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    try:
        seconds = smoke(base)
        print("smoke pipeline, wall time per stage [s]:")
        for stage, s in seconds.items():
            print(f"  {stage:9s} {s:7.2f}")
        print(f"  {'total':9s} {sum(seconds.values()):7.2f}")
        paths = write_tasks(generate_family("stack_three", count=args.problems, seed=0), base / "tasks")
        pddl = [str(p) for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl"]
        w1, e1, n1, h1 = execute(base, "w1", pddl, args.episodes, 1)
        w2, e2, n2, h2 = execute(base, "w2", pddl, args.episodes, 2)
        wr = None
        try:
            import ray

            t0 = time.perf_counter()
            # as execute_ray starts a Ray of its own (its workers inherit MUJOCO_GL), on 2 CPUs
            ray.init(address="local", num_cpus=2, log_to_driver=False, include_dashboard=False)
            ray_start = time.perf_counter() - t0
            wr, er, nr, hr = execute(base, "ray", pddl, args.episodes, 2, backend="ray")
            ray.shutdown()
        except ImportError:
            pass
        print(f"execute, {args.problems} problems x {args.episodes} episodes, envs=1, load average "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall s = episodes + merge):")
        print(f"  local 1 worker : {w1:6.2f} s  {n1 / w1:5.2f} episodes/s  (episodes {e1:6.2f} s, merge {w1 - e1:5.2f} s)")
        print(f"  local 2 workers: {w2:6.2f} s  {n2 / w2:5.2f} episodes/s  (episodes {e2:6.2f} s, merge {w2 - e2:5.2f} s)"
              f"  byte-identical: {h1 == h2}")
        if wr is None:
            print("  ray            : Ray not installed (pip install 'demoforge[ray]'); no figure")
        else:
            print(f"  ray, 2 CPUs    : {wr:6.2f} s  {nr / wr:5.2f} episodes/s  (episodes {er:6.2f} s, merge "
                  f"{wr - er:5.2f} s)  byte-identical: {hr == h1}  (+ {ray_start:.1f} s Ray start-up, not counted)")
            print(f"  ray / local 2 workers = {w2 / wr:.2f}x (target >= 0.9x)")
        print(f"  episodes alone, 2 workers / 1 worker = {e1 / e2:.2f}x (the merge is serial)")
        print(f"execute throughput 2 workers / 1 worker = {w1 / w2:.2f}x (target >= 1.7x on 2 cores)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
