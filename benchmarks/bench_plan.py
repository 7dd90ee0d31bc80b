"""Plan and re-plan times on blocks problems, pymimir against Fast Downward in one run.

Each problem moves random towers of N blocks into other random towers (the shipped
blocks domain, every orientation fact and static relation included). "plan" is a cold
call: load the problem, search, check the plan with the symbolic simulator. "re-plan"
starts from the state halfway along that plan with the same goal: pymimir reuses its
cached problem, Fast Downward translates and searches again.

    python benchmarks/bench_plan.py [--problems 15] [--seed 0]

"pymimir" is the default (lifted successors, deterministic across processes);
"pymimir-gr" is its grounded mode, faster to re-plan but not reproducible across
processes with pymimir 0.13.63, shown for comparison. Targets (default backend):
median plan <= 20 ms at 8 blocks, median re-plan <= 5 ms at 12 blocks.
"""

import argparse
import statistics
import time

import numpy as np

from demoforge.tasks import apply, domain_text, parse_task, static_facts
from demoforge.tasks.fast_downward import FastDownwardPlanner
from demoforge.tasks.mimir import MimirPlanner
from demoforge.tasks.pddl_text import goal_of_atoms, problem_to_pddl
from _machine import describe  # benchmarks/_machine.py: this script's folder is on sys.path

SIZES = (3, 5, 8, 12, 20)
BUDGET_S = 30.0


def towers(blocks: list[str], rng: np.random.Generator) -> list[tuple[str, ...]]:
    order = [blocks[i] for i in rng.permutation(len(blocks))]
    atoms, i = [], 0
    while i < len(order):
        tower = order[i: i + int(rng.integers(1, 5))]
        i += len(tower)
        atoms += [("on", a, b) for a, b in zip(tower, tower[1:], strict=False)]
        atoms += [("on_table", tower[-1]), ("clear", tower[0])]
    return atoms


def problem(n: int, rng: np.random.Generator):
    blocks = [f"b{i:02d}" for i in range(n)]
    init = [("hand_empty",), *towers(blocks, rng), *static_facts()]
    init += [a for b in blocks for a in (("face_up", b, "pz"), ("yaw", b, "yaw0"))]
    goal = [a for a in towers(blocks, rng) if a[0] in ("on", "on_table")]
    text = problem_to_pddl(name=f"towers{n}", domain_name="demoforge-blocks",
                           objects=[(b, "block") for b in blocks], init=init, goal=goal_of_atoms(goal))
    return parse_task(text, domain_text=domain_text("blocks"))


def timed(planner, task, state=None):
    start = time.perf_counter()
    result = planner.plan(task, state=state, time_budget_s=BUDGET_S)
    elapsed = time.perf_counter() - start
    assert result.solved, (task.name, result)
    return elapsed * 1000, result


def p95(values: list[float]) -> float:
    return float(np.percentile(values, 95))


def main() -> None:
    print(describe(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=15, help="problems per size")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    fast_downward = FastDownwardPlanner()
    timed(MimirPlanner(), problem(3, np.random.default_rng(99)))  # warm imports and parsers
    timed(fast_downward, problem(3, np.random.default_rng(99)))
    rows = {}
    print(f"{'blocks':>6} {'planner':>13} {'plan med':>9} {'plan p95':>9} {'len':>4} {'replan med':>11} {'replan p95':>11}")
    for n in SIZES:
        rng = np.random.default_rng([args.seed, n])
        stats = {"pymimir": ([], [], []), "pymimir-gr": ([], [], []), "fast-downward": ([], [], [])}
        for _ in range(args.problems):
            task = problem(n, rng)
            # Cold pymimir planners: a new goal needs a new problem anyway.
            backends = (("pymimir", MimirPlanner()), ("pymimir-gr", MimirPlanner(mode="grounded")),
                        ("fast-downward", fast_downward))
            for name, planner in backends:
                plan_ms, result = timed(planner, task)
                state = frozenset(task.init)
                for step in result.plan[: len(result.plan) // 2]:
                    state = apply(task, state, step)
                replan_ms, _ = timed(planner, task, state)
                stats[name][0].append(plan_ms)
                stats[name][1].append(replan_ms)
                stats[name][2].append(len(result.plan))
        for name, (plans, replans, lengths) in stats.items():
            rows[(n, name)] = (statistics.median(plans), statistics.median(replans))
            print(f"{n:>6} {name:>13} {statistics.median(plans):>9.1f} {p95(plans):>9.1f} "
                  f"{statistics.median(lengths):>4.0f} {statistics.median(replans):>11.2f} {p95(replans):>11.2f}")
    plan8, replan12 = rows[(8, "pymimir")][0], rows[(12, "pymimir")][1]
    print(f"target plan @8 <= 20 ms: {plan8:.1f} ms {'PASS' if plan8 <= 20 else 'MISS'}; "
          f"target re-plan @12 <= 5 ms: {replan12:.2f} ms {'PASS' if replan12 <= 5 else 'MISS'}")
    fd12 = rows[(12, "fast-downward")][1]
    print(f"headline: re-plan at 12 blocks, pymimir {replan12:.2f} ms vs Fast Downward {fd12:.1f} ms "
          f"= {fd12 / replan12:.1f}x faster")


if __name__ == "__main__":
    main()
