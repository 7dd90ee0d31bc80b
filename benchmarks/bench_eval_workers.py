"""Evaluation with workers: `eval --workers 2` against one worker, side by side in one run.

The expert is evaluated from the recorded states of --episodes episodes of pnp (generated
first, not timed), through `demoforge.policy.evaluate_from_dataset` as `demoforge eval` runs it:
one worker, then two (and one again, so a drifting machine shows), each into a fresh folder.
The bytes of the outputs are compared (they must not depend on the worker count). Wall time
and the CPU time of this process and its children are printed per run.

The last line is the headline: the speed-up of two workers over one (the target on a 2-core
machine is >= 1.7x).
Run: python benchmarks/bench_eval_workers.py [--episodes 128] [--envs 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

from demoforge.execute import generate  # noqa: E402
from demoforge.policy import RolloutSettings  # noqa: E402
from demoforge.policy.evaluate import evaluate_from_dataset  # noqa: E402
from demoforge.tasks import generate_family, write_tasks  # noqa: E402
from _machine import cpu_s, describe  # noqa: E402  # benchmarks/_machine.py: this script's folder is on sys.path


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def main() -> None:
    print(describe(), flush=True)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=128)
    ap.add_argument("--envs", type=int, default=2, help="envs per worker")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        paths = write_tasks(generate_family("pnp", count=max(1, args.episodes // 4), seed=0, split="test"),
                            tmp / "tasks")
        pddl = sorted(p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl")
        source = generate(pddl, tmp / "gen", episodes_per_problem=4, workers=2, seed=0).roots["success"]
        times = {}
        for k, workers in enumerate((1, 2, 1)):
            out = tmp / f"eval-{k}-{workers}"
            t0, c0 = time.perf_counter(), cpu_s()
            summary = evaluate_from_dataset("expert", source, out, envs=args.envs, workers=workers,
                                            settings=RolloutSettings(max_ticks=1200))
            wall, cpu = time.perf_counter() - t0, cpu_s() - c0
            times.setdefault(workers, []).append(wall)
            print(f"workers {workers}: {summary['overall']['episodes']} episodes in {wall:6.1f} s wall, {cpu:6.1f} s "
                  f"CPU, success {summary['overall']['success_rate']:.3f}", flush=True)
        same = files(tmp / "eval-0-1") == files(tmp / "eval-1-2") == files(tmp / "eval-2-1")
        print(f"outputs byte-identical across worker counts: {same}")
        one = min(times[1])
        print(f"headline: eval --workers 2 is {one / times[2][0]:.2f}x one worker ({one:.1f} s -> {times[2][0]:.1f} s "
              f"for {args.episodes} episodes)")


if __name__ == "__main__":
    main()
