"""`render_schedule: pipelined` writes the coupled schedule's bytes, file for file, through a run that
renders every tick and one that renders only the ticks its bake keeps, on the local pool and on Ray,
and after a SIGKILL in the middle of its render items the same command resumes it to those bytes.

Files that legitimately differ between two runs are compared without their timing and schedule
fields: each `.pipeline_state/<stage>.done` without `seconds` (wall time), `config.yaml` and each
`meta/demoforge/pipeline/provenance.json` without `render_schedule` (the config names the schedule).
The runs share one run folder path, moved aside in between: execute records its input paths."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from demoforge.pipeline import PipelineError, config_from_dict, run_pipeline, state
from tests.processes import spawned_children, wait_gone, wait_unlocked
from tests.timeouts import SUBPROCESS_S, WAIT_S

pytestmark = pytest.mark.slow

PROVENANCE = "meta/demoforge/pipeline/provenance.json"


def _config(base: Path, schedule: str, *, baked: bool, **kw) -> dict:
    """3 problems of 2 episodes (or `kw`'s) on 2 workers, the front camera at 64 px; `baked`: annotated
    and baked at 30 Hz (the run renders only the baked ticks), else rendered and merged at the native rate."""
    stages = {"control_space": "joint_target", "control_freq": 30, "skip": ["doctor"]} if baked else \
        {"skip": ["annotate", "bake", "doctor"]}
    return {"experiment_id": "exp", "out_dir": str(base), "problems": 3, "episodes_per_problem": 2,
            "reset_states": 2, "envs": 1, "workers": 2, "looks": ["plain"], "cameras": ["front"],
            "image_size": "64", "progress": False, "render_schedule": schedule, **stages, **kw}


def snapshot(run: Path) -> dict[str, object]:
    """Every file of a run folder: its bytes, or for the files named in the module docstring their
    content less the fields that differ by schedule and wall time."""
    out: dict[str, object] = {}
    for path in sorted(run.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(run).as_posix()
        if rel.startswith(state.STATE_DIR + "/"):
            record = json.loads(path.read_text())
            assert record.pop("seconds") >= 0
            out[rel] = record
        elif rel == "config.yaml":
            config = yaml.safe_load(path.read_text())
            assert config.pop("render_schedule") in ("coupled", "pipelined")
            out[rel] = config
        elif rel.endswith(PROVENANCE):
            record = json.loads(path.read_text())
            assert record["config"].pop("render_schedule") in ("coupled", "pipelined")
            out[rel] = record
        else:
            out[rel] = path.read_bytes()
    return out


def assert_same(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    differ = [rel for rel in a if a[rel] != b[rel]]
    assert not differ, differ


def _run(base: Path, schedule: str, *, baked: bool, aside: Path | None = None, **kw) -> dict:
    """Run the pipeline into BASE/exp, snapshot it, and move it to `aside` (or remove it)."""
    run_pipeline(config_from_dict(_config(base, schedule, baked=baked, **kw)), echo=lambda s: None)
    shot = snapshot(base / "exp")
    if aside is None:
        shutil.rmtree(base / "exp")
    else:
        (base / "exp").rename(aside)
    return shot


@pytest.fixture(scope="module")
def coupled_baked(tmp_path_factory) -> tuple[Path, dict]:
    base = tmp_path_factory.mktemp("schedule")
    return base, _run(base / "runs", "coupled", baked=True, aside=base / "coupled")


def test_the_schedule_is_a_checked_config_field():
    assert config_from_dict({"experiment_id": "x"}).render_schedule == "coupled"
    assert config_from_dict({"experiment_id": "x", "render_schedule": "pipelined"}).render_schedule == "pipelined"
    with pytest.raises(PipelineError, match=r"render_schedule \(--render-schedule\): 'eager' must be one of "
                                            r"coupled, pipelined"):
        config_from_dict({"experiment_id": "x", "render_schedule": "eager"})


def test_pipelined_writes_the_coupled_bytes_rendering_every_tick(tmp_path):
    """One problem of 8 episodes: its successes are cut into two render items, run side by side (the
    other tests render three problems, at their offsets)."""
    coupled = _run(tmp_path, "coupled", baked=False, problems=1, episodes_per_problem=8)
    pipelined = _run(tmp_path, "pipelined", baked=False, problems=1, episodes_per_problem=8)
    assert any(rel.startswith("render/success/videos/") for rel in pipelined)
    assert_same(coupled, pipelined)


def test_pipelined_writes_the_coupled_bytes_rendering_the_baked_ticks(coupled_baked):
    base, coupled = coupled_baked
    pipelined = _run(base / "runs", "pipelined", baked=True)
    assert any(rel.startswith("render/ticks/") for rel in pipelined) and any(
        rel.startswith("baked/videos/") for rel in pipelined)
    assert not any("pipelined" in rel or "/.shards/" in rel for rel in pipelined)  # nothing of the schedule is left
    assert_same(coupled, pipelined)


_CHILD = """
import json, sys
from demoforge.pipeline import config_from_dict, run_pipeline
run_pipeline(config_from_dict(json.loads(sys.argv[1])), echo=lambda s: None)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_pipelined_run_killed_in_its_render_items_resumes_to_the_coupled_bytes(coupled_baked):
    base, coupled = coupled_baked
    config = _config(base / "runs", "pipelined", baked=True)
    child = subprocess.Popen([sys.executable, "-c", _CHILD, json.dumps(config)], env={**os.environ, "MUJOCO_GL": "egl"})
    run = base / "runs" / "exp"
    shards = run / "execute" / ".shards"
    deadline = time.monotonic() + WAIT_S
    while not any(shards.glob("*-render-*/done.json")):  # a render item is final, the others to come
        assert child.poll() is None and time.monotonic() < deadline, "the child ended before a render item"
        time.sleep(0.05)
    workers = spawned_children(child.pid)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    wait_gone(workers, deadline)  # they die with it, a moment later, holding their shards' locks till then
    wait_unlocked(run, deadline)  # and any the snapshot missed (CI once found a render shard still locked)
    assert not state.is_done(run, "execute") and not (run / "render" / "success").exists()
    resumed = run_pipeline(config_from_dict(config), resume=True, echo=lambda s: None)
    assert resumed.ran[0] == "execute" and "tasks" in resumed.skipped
    shot = snapshot(run)
    shutil.rmtree(run)
    assert_same(coupled, shot)


_RAY_CHILD = """
import json, sys
from demoforge.pipeline import config_from_dict, run_pipeline
from demoforge.stage.ray import RayExecutor

seen = []
real = RayExecutor.run
def run(self, run, items, progress, between):
    seen.append(run.stage.name + ":" + ",".join(run.labels[k] for k in items))
    return real(self, run, items, progress, between)
RayExecutor.run = run
run_pipeline(config_from_dict(json.loads(sys.argv[1])), echo=lambda s: None)
print(json.dumps(seen))
"""


def test_pipelined_on_ray_runs_the_render_items_as_ray_tasks_with_the_coupled_bytes(coupled_baked):
    pytest.importorskip("ray")
    base, coupled = coupled_baked
    config = _config(base / "runs", "pipelined", baked=True, backend="ray")
    child = subprocess.run([sys.executable, "-c", _RAY_CHILD, json.dumps(config)],
                           env={**os.environ, "MUJOCO_GL": "egl"}, capture_output=True, text=True,
                           timeout=SUBPROCESS_S, check=False)
    assert child.returncode == 0, child.stderr[-3000:]
    seen = json.loads(child.stdout.strip().splitlines()[-1])
    assert any(s.startswith("generate:") and "render-stack_three-all-0002" in s for s in seen), seen
    run = base / "runs" / "exp"
    shot = snapshot(run)
    shutil.rmtree(run)
    # what differs by backend, not by schedule: the Ray executor's log of its tasks, and the execute
    # logs (Ray tasks send no episode events, so logs/execute/ holds only their items' lines)
    attempts = [rel for rel in shot if rel.startswith("execute/.ray/")]
    assert attempts
    for rel in attempts:
        del shot[rel]
    coupled = {rel: v for rel, v in coupled.items() if not rel.startswith("logs/")}
    shot = {rel: v for rel, v in shot.items() if not rel.startswith("logs/")}
    config_file = yaml.safe_load((base / "coupled" / "config.yaml").read_text())
    assert config_file["backend"] == "local" and shot["config.yaml"]["backend"] == "ray"
    for rel, value in shot.items():  # the backend is a config field too
        if rel == "config.yaml" or rel.endswith(PROVENANCE):
            target = value if rel == "config.yaml" else value["config"]
            target["backend"] = "local"
    assert_same(coupled, shot)
