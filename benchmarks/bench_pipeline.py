"""The pipeline: the smoke run's wall time per stage, and execution throughput with 1 and 2
local worker slots (target >= 1.7x on 2 cores), side by side in one run.

Part 1 runs `demoforge run --smoke-test --look plain --control-space joint_target` (one
stack_three problem, two episodes, front camera) and prints each stage's wall time; it
also warms this process, which the 1-worker run and the 2-worker run's first slot use.
Part 2 runs the execute stage alone (the local backend over `--problems` stack_three
problems, `--episodes` each, one env per slot) with 1 and then 2 worker slots into fresh
folders and compares episodes per second, then the Ray backend (a local Ray with 2 CPUs,
one task per problem) on the same 2 cores against the 2-worker local run (target >= 0.9x);
all outputs are checked byte-identical. Ray start-up is timed separately and left out.
Each configuration runs `--repeat` times, interleaved, and its median run is reported (a
run of a few seconds varies by several percent with which slot gets the slowest item).
Each run's wall time is split into its episodes (until the last item's shards are final;
finished items are merged meanwhile) and the merge's finish, which is serial.

The default workload is 16 problems x 3 episodes (about 12 s with two slots). What a second
slot cannot share is fixed per run: its worker's start-up (about 0.5 s), the one-problem
tail and the merge's finish; at 8 x 3 they weigh twice as much (see BENCHMARKS.md), over
the hundreds of problems of a real run they vanish. Run several sizes to see the trend.

The last line is the headline ratio.
Run: python benchmarks/bench_pipeline.py [--problems 16] [--episodes 3] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

from demoforge.pipeline import config_from_dict, run_pipeline  # noqa: E402
from demoforge.pipeline.execution import execute_problems, executor_for  # noqa: E402
from demoforge.pipeline.provenance import dataset_hash  # noqa: E402
from demoforge.stage import ProgressEvent  # noqa: E402
from demoforge.tasks import generate_family, write_tasks  # noqa: E402
from _machine import describe  # noqa: E402  # benchmarks/_machine.py: this script's folder is on sys.path


def smoke(base: Path) -> dict[str, float]:
    config = config_from_dict({"experiment_id": "smoke", "out_dir": str(base), "smoke_test": True,
                               "looks": ["plain"], "control_space": "joint_target"})
    return run_pipeline(config, echo=lambda s: None).seconds


def execute(base: Path, name: str, pddl: list[str], episodes: int, workers: int,
            backend: str = "local") -> tuple[float, float, int, str]:
    """(wall s, s until the last item's shards were final, episodes, hash of the success split)."""
    config = config_from_dict({"experiment_id": name, "out_dir": str(base), "episodes_per_problem": episodes,
                               "envs": 1, "workers": workers, "progress": False, "backend": backend})
    config.run_dir.mkdir(parents=True)
    last_item = []

    def progress(event: ProgressEvent) -> None:
        if event.kind == "item":
            last_item[:] = [time.perf_counter()]

    start = time.perf_counter()
    with executor_for(backend, config.ray_address) as executor:
        summary = execute_problems(config, pddl, config.run_dir / "execute", progress, executor=executor)
    end = time.perf_counter()
    digest = dataset_hash(summary.roots["success"]) if summary.roots["success"] else ""
    return end - start, last_item[0] - start, summary.episodes, digest


def median_run(runs: list[tuple]) -> tuple:
    """The run with the median wall time (the middle one of an odd count)."""
    return sorted(runs)[len(runs) // 2]


def main() -> None:
    print(describe(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", type=int, default=16)
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each configuration, interleaved; medians")
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
        try:
            import ray
        except ImportError:
            ray = None
        ray_start: list[float] = []
        runs: dict[str, list[tuple]] = {"w1": [], "w2": [], "ray": []}
        for r in range(args.repeat):  # interleaved, so a drift in the machine's speed hits all alike
            runs["w1"].append(execute(base, f"w1-{r}", pddl, args.episodes, 1))
            runs["w2"].append(execute(base, f"w2-{r}", pddl, args.episodes, 2))
            if ray is not None:  # a fresh Ray per run (up only while it runs), on 2 CPUs, as
                t0 = time.perf_counter()  # executor_for starts one (its workers inherit MUJOCO_GL)
                ray.init(address="local", num_cpus=2, log_to_driver=False, include_dashboard=False)
                ray_start.append(time.perf_counter() - t0)
                runs["ray"].append(execute(base, f"ray-{r}", pddl, args.episodes, 2, backend="ray"))
                ray.shutdown()
        hashes = {run[3] for config in runs.values() for run in config}
        (w1, e1, n1, _), (w2, e2, n2, _) = median_run(runs["w1"]), median_run(runs["w2"])
        print(f"execute, {args.problems} problems x {args.episodes} episodes, envs=1, load average "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; median of {args.repeat} interleaved runs "
              f"(wall s = episodes + merge finish); all {sum(map(len, runs.values()))} outputs byte-identical: "
              f"{len(hashes) == 1}")
        for name, config in runs.items():
            if config:
                print(f"  {name:4s} wall s: " + ", ".join(f"{run[0]:.2f}" for run in config))
        print(f"  local 1 worker : {w1:6.2f} s  {n1 / w1:5.2f} episodes/s  (episodes {e1:6.2f} s, merge {w1 - e1:5.2f} s)")
        print(f"  local 2 workers: {w2:6.2f} s  {n2 / w2:5.2f} episodes/s  (episodes {e2:6.2f} s, merge {w2 - e2:5.2f} s)")
        if ray is None:
            print("  ray            : Ray not installed (pip install 'demoforge[ray]'); no figure")
        else:
            wr, er, nr, _ = median_run(runs["ray"])
            print(f"  ray, 2 CPUs    : {wr:6.2f} s  {nr / wr:5.2f} episodes/s  (episodes {er:6.2f} s, merge "
                  f"{wr - er:5.2f} s)  (+ {statistics.median(ray_start):.1f} s Ray start-up, not counted)")
            print(f"  ray / local 2 workers = {w2 / wr:.2f}x (target >= 0.9x)")
        print(f"  episodes alone, 2 workers / 1 worker = {e1 / e2:.2f}x (the merge finish is serial)")
        print(f"execute throughput 2 workers / 1 worker = {w1 / w2:.2f}x (target >= 1.7x on 2 cores)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
