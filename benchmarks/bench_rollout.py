"""Roll-out throughput: an ONNX policy with M = 1, 8, 32 environments per process, against
the expert's generation throughput, side by side in one run (issue #11).

The policy is a small MLP (state 8 -> 64 -> 64 -> 8, tanh, sigmoid gripper; random fixed
weights) exported with onnx and run by onnxruntime on CPU, one thread. Every roll-out
episode runs the full recording path of `demoforge.policy.rollout` (per-tick physics
state, symbolic state and goal check, episode columns and metrics, the dataset writer)
for a fixed number of ticks (the policy never reaches the goal, so every episode is
truncated at --ticks). The expert runs `demoforge.execute.generate` on the same problem
(one worker, --expert-envs envs); its episodes are longer, so ticks/s is printed too.

The last line is the headline ratio.
Run: python benchmarks/bench_rollout.py [--episodes 32] [--ticks 120] [--expert-episodes 8]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402

from demoforge.dataset import open_dataset  # noqa: E402
from demoforge.execute import generate  # noqa: E402
from demoforge.policy import RolloutSettings, load_policy, rollout  # noqa: E402
from demoforge.tasks import generate_family, write_tasks  # noqa: E402
from _machine import describe  # noqa: E402  # benchmarks/_machine.py: this script's folder is on sys.path


def mlp_onnx(path: Path, n: int = 8, hidden: int = 64, seed: int = 0) -> Path:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    w1 = rng.normal(0, 0.1, (n, hidden)).astype(np.float32)
    w2 = rng.normal(0, 0.1, (hidden, hidden)).astype(np.float32)
    w3 = rng.normal(0, 0.01, (hidden, n)).astype(np.float32)
    inits = [numpy_helper.from_array(a, k) for a, k in ((w1, "W1"), (w2, "W2"), (w3, "W3"))]
    inits.append(numpy_helper.from_array(np.array([n - 1, 1], np.int64), "sizes"))
    nodes = [helper.make_node("MatMul", ["observation.state", "W1"], ["a1"]), helper.make_node("Tanh", ["a1"], ["h1"]),
             helper.make_node("MatMul", ["h1", "W2"], ["a2"]), helper.make_node("Tanh", ["a2"], ["h2"]),
             helper.make_node("MatMul", ["h2", "W3"], ["d"]),
             helper.make_node("Add", ["observation.state", "d"], ["z"]),  # a small step from where the arm is
             helper.make_node("Split", ["z", "sizes"], ["arm", "g"], axis=1),
             helper.make_node("Sigmoid", ["g"], ["gs"]), helper.make_node("Concat", ["arm", "gs"], ["action"], axis=1)]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("observation.state", TensorProto.FLOAT,
                                                                            ["batch", n])],
                              [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    path.write_bytes(model.SerializeToString())
    return path


def main() -> None:
    print(describe(), flush=True)
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=32, help="roll-out episodes per env count")
    ap.add_argument("--ticks", type=int, default=120, help="ticks per roll-out episode")
    ap.add_argument("--expert-episodes", type=int, default=8)
    ap.add_argument("--expert-envs", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        paths = write_tasks(generate_family("pnp", count=1, seed=11), tmp / "tasks")
        problem = next(p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl")
        model = mlp_onnx(tmp / "mlp.onnx")
        rows = []
        for m in (1, 8, 32):
            t0, c0 = time.perf_counter(), time.process_time()
            summary = rollout(load_policy(str(model)), [problem], tmp / f"r{m}", episodes=args.episodes, envs=m,
                              settings=RolloutSettings(max_ticks=args.ticks), spec="mlp.onnx")
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            ticks = open_dataset(tmp / f"r{m}" / "dataset").num_frames
            assert summary["overall"]["episodes"] == args.episodes
            rows.append((f"ONNX MLP roll-out, M={m}", args.episodes, ticks, wall, cpu))
        t0, c0 = time.perf_counter(), time.process_time()
        s = generate([problem], tmp / "gen", episodes_per_problem=args.expert_episodes, envs=args.expert_envs, seed=0)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        ticks = sum(open_dataset(r).num_frames for r in s.roots.values() if r is not None)
        rows.append((f"expert generate, envs={args.expert_envs}", s.episodes, ticks, wall, cpu))
    print("| run | episodes | ticks | wall s | episodes/min | ticks/s | CPU ticks/s |")
    print("|---|---|---|---|---|---|---|")
    for name, n, ticks, wall, cpu in rows:
        print(f"| {name} | {n} | {ticks} | {wall:.2f} | {60 * n / wall:.1f} | {ticks / wall:.0f} | {ticks / cpu:.0f} |")
    best = max(rows[:3], key=lambda r: r[2] / r[3])
    expert = rows[3]
    print(f"roll-out ticks/s, best M ({best[0]}) {best[2] / best[3]:.0f} vs expert generate {expert[2] / expert[3]:.0f}"
          f" = {(best[2] / best[3]) / (expert[2] / expert[3]):.2f}x; episodes/min {60 * best[1] / best[3]:.0f} vs "
          f"{60 * expert[1] / expert[3]:.0f} (expert episodes are {expert[2] / expert[1]:.0f} ticks, roll-outs "
          f"{best[2] / best[1]:.0f})")


if __name__ == "__main__":
    main()
