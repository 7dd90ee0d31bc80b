"""generate with one problem per work item against eight (`--problems-per-process`), the same
many-problem run, side by side in one run.

--problems pnp problems x --episodes episodes each, --envs environments stepped together, one
worker (so episodes per wall-hour are episodes per core-hour). With one problem per item, an
item has only --episodes episodes for its --envs slots, and the slots left empty at the item's
tail idle; with eight, the episodes of eight problems fill them. Order: 1, 8, 1 (a drifting
machine shows). The outputs' bytes are compared (they must not depend on the grouping).

The last line is the headline: episodes per core-hour with 8 problems per item and with 1.
Run: python benchmarks/bench_problems_per_process.py [--problems 16] [--episodes 2] [--envs 4]
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
from _machine import cpu_s, describe  # noqa: E402  # benchmarks/_machine.py: this script's folder is on sys.path


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for split in ("success", "failure")
            for p in sorted((root / split).rglob("*")) if p.is_file()}


def main() -> None:
    print(describe(), flush=True)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="pnp")
    ap.add_argument("--problems", type=int, default=16)
    ap.add_argument("--episodes", type=int, default=2, help="episodes per problem")
    ap.add_argument("--envs", type=int, default=4)
    args = ap.parse_args()
    print(f"work: {args.problems} {args.family} problems x {args.episodes} episodes, envs {args.envs}, 1 worker",
          flush=True)
    rates: dict[int, list[float]] = {}
    outputs = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        paths = write_tasks(generate_family(args.family, count=args.problems, seed=0, split="test"), tmp / "tasks")
        pddl = sorted(p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl")
        for i, n in enumerate((1, 8, 1)):
            c0, t0 = cpu_s(), time.perf_counter()
            summary = generate(pddl, tmp / f"run{i}", episodes_per_problem=args.episodes, envs=args.envs, workers=1,
                               seed=0, problems_per_process=n)
            wall, cpu = time.perf_counter() - t0, cpu_s() - c0
            rate = summary.episodes / wall * 3600
            rates.setdefault(n, []).append(rate)
            outputs.setdefault(n, files(tmp / f"run{i}"))
            print(f"{n} problem(s) per item: {summary.episodes} episodes in {wall:6.1f} s wall, {cpu:6.1f} s CPU: "
                  f"{rate:6.0f} episodes per core-hour", flush=True)
    same = outputs[1] == outputs[8]
    one = sum(rates[1]) / len(rates[1])
    print(f"bytes identical across groupings: {same}")
    print(f"headline: {rates[8][0]:.0f} episodes per core-hour with 8 problems per item, {one:.0f} with 1 "
          f"({rates[8][0] / one:.2f}x, envs {args.envs}); bytes identical: {same}")


if __name__ == "__main__":
    main()
