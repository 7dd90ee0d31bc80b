"""The Ray backend without --ray-address: a Ray of its own on this machine (its workers
inherit this environment), the same bytes as the local backend, and shut down afterwards.

Run in a child process: after this Ray session, the loopback cluster test's driver in the
same process had its tasks fail to fetch the objects it put (OwnerDiedError)."""

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
import json, sys
import ray
from demoforge.pipeline import config_from_dict
from demoforge.pipeline.execution import execute_problems, executor_for
from demoforge.pipeline.provenance import dataset_hash

pddl, runs, play = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3] == "play"
outs = {}
for backend in ("local", "ray"):
    config = config_from_dict({"experiment_id": backend, "out_dir": runs, "workers": 2, "episodes_per_problem": 2,
                               "envs": 1, "backend": backend, "progress": False,
                               **({"play": True, "play_goals": 2} if play else {})})
    config.run_dir.mkdir(parents=True)
    with executor_for(backend, config.ray_address) as executor:
        summary = execute_problems(config, pddl, config.run_dir / "execute", executor=executor)
    outs[backend] = {"episodes": summary.episodes,
                     **{split: dataset_hash(root) for split, root in summary.roots.items() if root is not None}}
print(json.dumps({**outs, "ray_left_running": ray.is_initialized()}))
"""


@pytest.mark.parametrize("kind", ["expert", "play"])
def test_a_ray_of_its_own_matches_local(tmp_path, kind):
    """Play data too: it is the execute stage with another expert, on whichever executor."""
    from demoforge.tasks import generate_family, write_tasks

    paths = write_tasks(generate_family("pnp", count=3, seed=2), tmp_path / "tasks")
    pddl = [str(p) for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl"]
    child = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(pddl), str(tmp_path / "runs"), kind],
                           env={**os.environ, "MUJOCO_GL": "egl"}, capture_output=True, text=True, timeout=SUBPROCESS_S,
                           check=False)
    assert child.returncode == 0, child.stderr[-3000:]
    result = json.loads(child.stdout.strip().splitlines()[-1])
    assert result["local"]["episodes"] == 6 and "success" in result["local"]
    assert result["ray"] == result["local"]
    assert not result["ray_left_running"]


_PIPELINE_CHILD = """
import hashlib, json, sys
from demoforge.pipeline import config_from_dict, run_pipeline
from demoforge.stage.ray import RayExecutor

seen = []
real = RayExecutor.run
def run(self, run, items, progress, between):
    seen.append(run.stage.name)
    return real(self, run, items, progress, between)
RayExecutor.run = run
out = sys.argv[1]
hashes = {}
for backend in ("local", "ray"):
    config = config_from_dict({"experiment_id": backend, "out_dir": out, "problems": 1, "episodes_per_problem": 2,
                               "reset_states": 2, "envs": 1, "workers": 2, "backend": backend, "progress": False,
                               "looks": ["plain"], "cameras": ["front"], "control_space": "joint_target",
                               "control_freq": 60, "skip": ["doctor"]})
    result = run_pipeline(config, echo=lambda s: None)
    root = config.run_dir / "baked"  # the data and videos (meta records the run's own paths)
    hashes[backend] = {str(f.relative_to(root)): hashlib.sha256(f.read_bytes()).hexdigest()
                       for f in sorted(root.rglob("*")) if f.is_file() and f.parts[len(root.parts)] in ("data", "videos")}
print(json.dumps({"hashes": hashes, "ray_stages": seen}))
"""


def test_the_ray_backend_runs_render_annotate_and_bake_on_ray_with_the_local_bytes(tmp_path):
    """Under backend ray every stage that has work items runs them on the Ray executor (not only
    execute), each stage object carrying its settings, and the baked dataset is the local one."""
    child = subprocess.run([sys.executable, "-c", _PIPELINE_CHILD, str(tmp_path / "runs")],
                           env={**os.environ, "MUJOCO_GL": "egl"}, capture_output=True, text=True, timeout=SUBPROCESS_S,
                           check=False)
    assert child.returncode == 0, child.stderr[-3000:]
    result = json.loads(child.stdout.strip().splitlines()[-1])
    assert {"generate", "render", "annotate", "bake"} <= set(result["ray_stages"]), result["ray_stages"]
    assert result["hashes"]["local"] and result["hashes"]["ray"] == result["hashes"]["local"]
