"""`run --backend ray` on one Ray node of 1 CPU against two nodes of 1 CPU each, the same work,
side by side in one run.

Each cluster is Ray's own `ray.cluster_utils.Cluster` on this machine (separate raylets and
object stores per node, as on a real cluster; all traffic stays on this machine). The run is the
pipeline's generate, render (plain look, front camera), annotate and bake over --problems
stack_three problems x --episodes episodes; the cluster's start is timed apart. Outputs of both
runs are compared (bytes must not depend on the node count), and each stage's items per node are
printed. Order: 1 node, 2 nodes, 1 node again (a drifting machine shows).

The last line is the headline: the speed-up of two nodes over one (at most 2x on a 2-core machine,
less the driver's merges, which run on the driver between items).
Run: python benchmarks/bench_ray_nodes.py [--problems 4] [--episodes 4] [--image-size 224]
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from demoforge.pipeline import config_from_dict, run_pipeline  # noqa: E402
from demoforge.stage.ray import RayExecutor  # noqa: E402
from _machine import describe  # noqa: E402  # benchmarks/_machine.py: this script's folder is on sys.path

PLACEMENTS: list[tuple[str, str, str]] = []
_close = RayExecutor.close


def _keep(self) -> None:
    PLACEMENTS.extend(self.placements)
    _close(self)


RayExecutor.close = _keep


def tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.parts[len(root.parts)] in ("data", "videos")}


def one(nodes: int, out: Path, args: argparse.Namespace) -> tuple[float, float, dict, dict]:
    """(start-up s, run s, baked files, stage -> items per node) of a run on `nodes` nodes of 1 CPU."""
    t0 = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    for _ in range(nodes - 1):
        cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    start = time.perf_counter() - t0
    PLACEMENTS.clear()
    try:
        config = config_from_dict({"experiment_id": "exp", "out_dir": str(out), "problems": args.problems,
                                   "episodes_per_problem": args.episodes, "reset_states": 2, "envs": 1,
                                   "workers": nodes, "backend": "ray", "ray_address": cluster.address,
                                   "progress": False, "looks": ["plain"], "cameras": ["front"],
                                   "image_size": str(args.image_size), "control_space": "joint_target",
                                   "control_freq": 30, "skip": ["doctor"]})
        t0 = time.perf_counter()
        run_pipeline(config, echo=lambda s: None)
        wall = time.perf_counter() - t0
    finally:
        ray.shutdown()
        cluster.shutdown()
    spread: dict = collections.defaultdict(collections.Counter)
    names = {}
    for stage, _, node in PLACEMENTS:
        spread[stage][names.setdefault(node, f"node{len(names)}")] += 1
    return start, wall, tree(config.run_dir / "baked"), {k: dict(v) for k, v in spread.items()}


def main() -> None:
    print(describe(), flush=True)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=4)
    ap.add_argument("--episodes", type=int, default=4, help="episodes per problem")
    ap.add_argument("--image-size", type=int, default=224)
    args = ap.parse_args()
    print(f"work: {args.problems} stack_three problems x {args.episodes} episodes, generate + render (plain, front "
          f"{args.image_size} px) + annotate + bake 30 Hz", flush=True)
    walls: dict[int, list[float]] = collections.defaultdict(list)
    outputs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, nodes in enumerate((1, 2, 1)):
            start, wall, files, spread = one(nodes, Path(tmp) / f"run{i}", args)
            walls[nodes].append(wall)
            outputs.setdefault(nodes, files)
            print(f"{nodes} node(s) x 1 CPU: {wall:6.1f} s (cluster start {start:.1f} s apart); items per node: "
                  + "; ".join(f"{stage} {dict(sorted(c.items()))}" for stage, c in spread.items()), flush=True)
    same = outputs[1] == outputs[2]
    print(f"baked data and videos identical across node counts: {same}")
    one_node = sum(walls[1]) / len(walls[1])
    print(f"headline: 2 nodes x 1 CPU {one_node / walls[2][0]:.2f}x 1 node x 1 CPU on the same run "
          f"({walls[2][0]:.1f} s vs {one_node:.1f} s, mean of {len(walls[1])}); bytes identical: {same}")


if __name__ == "__main__":
    main()
