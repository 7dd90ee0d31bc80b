"""generate's yield on every family of a task package: held-out problems, the expert, side by side.

Per family (--families, default: every family of the packages given by --task-package, or the
blocks world's five when none is given): `tasks gen FAMILY --split test --problems P --task-seed S`,
then `generate --episodes-per-problem E --seed S` on --workers workers; the episodes that reach
the goal (judged by the package's own predicates in the simulator) over those run, the failures
by kind, and the wall and CPU time. This is the target "generate yield >= 90% on 40 episodes of
each family on a held-out seed" of a task package.

The last line is the headline: each family's yield.
Run: python benchmarks/bench_task_yield.py --task-package examples/tasks/kitchen/kitchen_task.py
     [--problems 20] [--episodes 2] [--seed 7] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

from demoforge.execute import generate  # noqa: E402
from demoforge.tasks import generate_family, write_tasks  # noqa: E402
from demoforge.tasks.package import load_package, owner  # noqa: E402
from _machine import cpu_s, describe  # noqa: E402  # benchmarks/_machine.py: this script's folder is on sys.path

BLOCKS = ("stack_three", "unstack", "pnp", "flip", "rotate")


def main() -> None:
    print(describe(), flush=True)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task-package", action="append", default=[], help="a .py file or module (repeatable)")
    ap.add_argument("--families", default=None, help="comma-separated; default: every family of the packages")
    ap.add_argument("--problems", type=int, default=20, help="held-out problems per family")
    ap.add_argument("--episodes", type=int, default=2, help="episodes per problem")
    ap.add_argument("--seed", type=int, default=7, help="seed of the problems and of the generate run")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    packages = [load_package(spec) for spec in args.task_package]
    families = (args.families.split(",") if args.families else
                [f for p in packages for f in sorted(p.families)] if packages else list(BLOCKS))
    print(f"work: {args.problems} test-split problems x {args.episodes} episodes per family, seed {args.seed}, "
          f"{args.workers} workers", flush=True)
    yields = {}
    with tempfile.TemporaryDirectory() as tmp:
        for family in families:
            work = Path(tmp) / family
            paths = write_tasks(generate_family(family, count=args.problems, seed=args.seed, split="test"),
                                work / "tasks")
            pddl = sorted(p for p in paths if p.suffix == ".pddl" and p.with_suffix(".scene.json").is_file())
            c0, t0 = cpu_s(), time.perf_counter()
            summary = generate(pddl, work / "raw", episodes_per_problem=args.episodes, workers=args.workers,
                               seed=args.seed, domain=owner("families", family).name)
            wall, cpu = time.perf_counter() - t0, cpu_s() - c0
            yields[family] = (summary.successes, summary.episodes)
            print(f"{family:14s} {summary.successes:4d}/{summary.episodes:<4d} episodes reach the goal "
                  f"({100 * summary.successes / summary.episodes:5.1f}%), failures {summary.failure_kinds() or 'none'}; "
                  f"{wall:6.1f} s wall, {cpu:6.1f} s CPU", flush=True)
    print("headline: generate yield on held-out problems: " + ", ".join(
        f"{f} {s}/{n} ({100 * s / n:.0f}%)" for f, (s, n) in yields.items()))


if __name__ == "__main__":
    main()
