"""The Ray backend on a real loopback cluster (a head node and a worker node, separate
processes started here): same bytes as the local backend, and a worker node killed mid-run
whose work item Ray retries on the head, continuing from the episodes already in its shard."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from demoforge.pipeline import config_from_dict, run_pipeline
from demoforge.pipeline.provenance import dataset_hash
from tests.timeouts import SUBPROCESS_S, WAIT_S

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_node(args: list[str], env: dict) -> subprocess.Popen:
    exe = Path(shutil.which("ray") or Path(os.sys.executable).with_name("ray"))
    return subprocess.Popen([str(exe), "start", "--block", "--disable-usage-stats", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def _stop(node: subprocess.Popen, sig=signal.SIGTERM) -> None:
    if node.poll() is None:
        try:
            os.killpg(node.pid, sig)
        except ProcessLookupError:
            return
    try:
        node.wait(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(node.pid, signal.SIGKILL)
        node.wait()


def _config(out: Path, **kw) -> dict:
    return {"experiment_id": "exp", "out_dir": str(out), "problems": 2, "episodes_per_problem": 3,
            "reset_states": 2, "envs": 1, "workers": 1, "skip": ["render", "annotate", "bake", "doctor"], **kw}


def test_ray_cluster_with_a_killed_worker_matches_local(tmp_path):
    base = tmp_path / "base"
    local = run_pipeline(config_from_dict(_config(base)), echo=lambda s: None)
    assert local.ran == ("tasks", "scenes", "execute", "merge")
    base.rename(tmp_path / "local")  # both runs use the same paths: execute records its inputs

    port = _free_port()
    address = f"127.0.0.1:{port}"
    env = {**os.environ, "MUJOCO_GL": "egl", "RAY_AUTH_MODE": "disabled"}
    os.environ["RAY_AUTH_MODE"] = "disabled"
    head = _ray_node(["--head", f"--port={port}", "--num-cpus=1", "--include-dashboard=false",
                      "--node-ip-address=127.0.0.1"], env)
    worker = None
    try:
        deadline = time.monotonic() + WAIT_S
        while subprocess.run([str(Path(os.sys.executable).with_name("ray")), "status", f"--address={address}"],
                             env=env, capture_output=True, check=False).returncode != 0:
            assert head.poll() is None and time.monotonic() < deadline, "ray head did not come up"
            time.sleep(1)
        worker = _ray_node([f"--address={address}", "--num-cpus=1", "--node-ip-address=127.0.0.1",
                            '--resources={"victim": 1}'], env)
        ray.init(address=address, log_to_driver=False)
        while not any(n["Alive"] and "victim" in n["Resources"] for n in ray.nodes()):
            assert time.monotonic() < deadline, "ray worker did not join"
            time.sleep(0.5)
        victim = next(n["NodeID"] for n in ray.nodes() if n["Alive"] and "victim" in n["Resources"])

        import threading

        result: dict = {}
        config = config_from_dict(_config(base, backend="ray", ray_address=address))
        runner = threading.Thread(target=lambda: result.setdefault("r", run_pipeline(config, echo=lambda s: None)))
        runner.start()
        attempts = base / "exp" / "execute" / ".ray"
        shards = base / "exp" / "execute" / ".shards"
        killed_item = None
        while killed_item is None:
            assert runner.is_alive() and time.monotonic() < deadline + WAIT_S, "no item ran on the worker node"
            for f in sorted(attempts.glob("*.json")) if attempts.is_dir() else []:
                rec = json.loads(f.read_text())
                item = [d for d in shards.glob(f"{rec['item']:04d}-*")] if shards.is_dir() else []
                staged = item and list(item[0].glob("*/.demoforge-staging"))
                if rec["node"] == victim and staged:
                    killed_item, victim_pid = rec["item"], rec["pid"]
            time.sleep(0.05)
        _stop(worker, signal.SIGKILL)  # the worker node's raylet and its process group
        try:
            os.kill(victim_pid, signal.SIGKILL)  # the task's worker process (Ray starts it in its own group)
        except ProcessLookupError:
            pass
        runner.join(timeout=SUBPROCESS_S)
        assert not runner.is_alive(), "the ray run did not finish after the worker was killed"
        runs = [json.loads(f.read_text()) for f in sorted(attempts.glob("*.json"))]
        retried = [r for r in runs if r["item"] == killed_item]
        assert len(retried) >= 2 and retried[-1]["node"] != victim, runs
    finally:
        if ray.is_initialized():
            ray.shutdown()
        if worker is not None:
            _stop(worker, signal.SIGKILL)
        _stop(head)
    for rel in ("execute/success", "execute/failure", "dataset/train", "dataset/failures"):
        a, b = base / "exp" / rel, tmp_path / "local" / "exp" / rel
        assert a.is_dir() == b.is_dir(), rel
        if a.is_dir():
            assert dataset_hash(a) == dataset_hash(b), rel
