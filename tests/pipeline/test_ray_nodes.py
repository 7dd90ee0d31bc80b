"""`run --backend ray` over a real two-node Ray cluster (`ray.cluster_utils.Cluster`: a head and a
second node, each with its own raylet and object store, all on this machine): generate, render,
annotate and bake spread over both nodes, and the output is the local backend's, byte for byte.

Run in a child process, like the other Ray tests: a driver process keeps Ray state between
sessions (see test_ray_of_its_own.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.timeouts import SUBPROCESS_S

pytest.importorskip("ray")
pytestmark = pytest.mark.slow

_CHILD = """
import collections, hashlib, json, os, sys
from pathlib import Path
os.environ["MUJOCO_GL"] = "egl"
os.environ["RAY_AUTH_MODE"] = "disabled"
import ray
from ray.cluster_utils import Cluster
from demoforge.pipeline import config_from_dict, run_pipeline
from demoforge.stage.ray import RayExecutor

out = Path(sys.argv[1])
placements = []
close = RayExecutor.close
def keep(self):
    placements.extend(self.placements)
    close(self)
RayExecutor.close = keep

def run(backend, **kw):
    config = config_from_dict({"experiment_id": "exp", "out_dir": str(out / backend), "problems": 2,
                               "episodes_per_problem": 4, "reset_states": 2, "envs": 1, "workers": 2,
                               "backend": backend, "progress": False, "looks": ["plain"],
                               "cameras": ["front"], "image_size": "64", "control_space": "joint_target",
                               "control_freq": 60, "skip": ["doctor"], **kw})
    run_pipeline(config, echo=lambda s: None)
    files = {}
    for rel in ("execute/success", "render/success", "annotated", "baked"):
        root = config.run_dir / rel
        files[rel] = {str(f.relative_to(root)): hashlib.sha256(f.read_bytes()).hexdigest()
                      for f in sorted(root.rglob("*")) if f.is_file() and f.parts[len(root.parts)] in ("data", "videos")}
    nodes = collections.defaultdict(set)
    for stage, _, node in placements:
        nodes[stage].add(node)
    return files, {k: sorted(v) for k, v in nodes.items()}

local, _ = run("local")
cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
cluster.add_node(num_cpus=1)
cluster.wait_for_nodes()
ray.init(address=cluster.address, log_to_driver=False)
try:
    ids = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
    remote, nodes = run("ray", ray_address=cluster.address)
finally:
    ray.shutdown()
    cluster.shutdown()
print(json.dumps({"local": local, "ray": remote, "nodes": nodes, "ids": ids}))
"""


def test_a_two_node_cluster_runs_every_stage_on_both_nodes_with_the_local_bytes(tmp_path):
    child = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path)], env={**os.environ, "MUJOCO_GL": "egl"},
                           capture_output=True, text=True, timeout=SUBPROCESS_S, check=False)
    assert child.returncode == 0, child.stderr[-3000:]
    result = json.loads(child.stdout.strip().splitlines()[-1])
    assert len(result["ids"]) == 2
    for rel, files in result["local"].items():
        assert files and result["ray"][rel] == files, rel  # data and videos of every stage: the local bytes
    # 2 problems (generate's items), 8 episodes (2 items of 4 for render, annotate and bake): every
    # stage's two items ran at once, one on each node
    assert result["nodes"] == {stage: result["ids"] for stage in ("generate", "render", "annotate", "bake")}
