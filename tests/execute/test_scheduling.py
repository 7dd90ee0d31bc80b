"""generate's worker slots: items taken one at a time by this process and spawned workers
(both take part, each item runs once), the same bytes as one worker; a worker killed
mid-item is reported as such, a killed parent takes its workers with it, and both runs
resume to the same bytes."""

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from demoforge.execute import ExecuteError, generate

from .conftest import problem_files
from .test_generate import _outputs
from tests.processes import spawned_children, wait_gone
from tests.timeouts import SUBPROCESS_S, WAIT_S

pytestmark = pytest.mark.slow  # spawns workers


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    """Four pick-and-place problems: more items than slots with an item per problem
    (`problems_per_process=1`, which the tests of slots and kills pass)."""
    return problem_files(tmp_path_factory.mktemp("four"), "pnp", 4)


@pytest.fixture(scope="module")
def reference(four, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "run"
    generate(four, out, episodes_per_problem=2, envs=1, workers=1, seed=3)
    return _outputs(out)


def test_this_process_and_a_worker_share_the_items(four, reference, tmp_path):
    out = tmp_path / "run"
    ran: dict[str, list[str]] = {"here": [], "worker": []}

    def progress(event):
        if event.kind != "item":
            return
        here = threading.current_thread() is threading.main_thread()  # worker events arrive on the listener
        ran["here" if here else "worker"].append(event.item)
        if here and len(ran["here"]) == 1:  # hold this slot until the worker has finished an item
            deadline = time.monotonic() + WAIT_S
            while len(list(out.glob(".shards/*/done.json"))) < 2:
                assert time.monotonic() < deadline, "the worker finished no item"
                time.sleep(0.05)

    generate(four, out, episodes_per_problem=2, envs=3, workers=2, seed=3, progress=progress, problems_per_process=1)
    assert ran["here"][0] == "pnp-all-0000"  # this process starts while the worker imports
    assert ran["worker"]
    assert sorted(ran["here"] + ran["worker"]) == [f"pnp-all-{k:04d}" for k in range(4)]
    assert _outputs(out) == reference


@pytest.mark.parametrize("per_process, envs, workers", [(1, 3, 1), (3, 3, 1), (8, 2, 2)])
def test_problems_sharing_a_process_change_no_byte(four, reference, tmp_path, per_process, envs, workers):
    """Episodes of several problems share one item's envs (`problems_per_process`); an episode's
    randomness is seeded by (run seed, problem, episode), so the grouping, the env count and the
    worker count leave the output as the reference's (4 problems, envs 1, one worker)."""
    out = tmp_path / "run"
    items = []
    generate(four, out, episodes_per_problem=2, envs=envs, workers=workers, seed=3, problems_per_process=per_process,
             progress=lambda e: items.append(e.item) if e.kind == "item" else None)
    assert _outputs(out) == reference
    groups = {1: 4, 3: 2, 8: 2}[per_process]  # 8 on 2 workers: two items of two, so both slots work
    assert len(items) == groups, items


def test_a_killed_worker_is_reported_and_its_run_resumes(four, reference, tmp_path):
    out = tmp_path / "run"
    killed = []

    def progress(event):
        here = threading.current_thread() is threading.main_thread()
        if event.kind == "episode" and not here and not killed:  # the worker is inside an item
            (child,) = multiprocessing.active_children()
            os.kill(child.pid, signal.SIGKILL)
            killed.append(event.item)

    # an item per problem, so there are more items than slots: the worker is still busy (it takes the next
    # item) when its first episode's event arrives here; with two items of two it may have finished its only one
    with pytest.raises(ExecuteError, match="died .*rerun the same command"):
        generate(four, out, episodes_per_problem=2, envs=1, workers=2, seed=3, progress=progress,
                 problems_per_process=1)
    assert killed and not (out / "success").exists()
    generate(four, out, episodes_per_problem=2, envs=1, workers=2, seed=3)
    assert _outputs(out) == reference


def test_a_worker_error_stops_the_hand_out_and_is_raised_here(four, reference, tmp_path):
    out = tmp_path / "run"

    def crash(*args):
        raise RuntimeError("stop after run.json")

    one = {"problems_per_process": 1}  # an item per problem, so item 1 is problem 1
    with pytest.raises(RuntimeError):  # a run folder of these arguments, nothing finished
        generate(four, out, episodes_per_problem=2, envs=1, workers=1, seed=3, after_skill=crash, **one)
    blocker = out / ".shards" / "0001-pnp-all-0001"
    blocker.write_text("a file where item 1's folder goes")

    def progress(event):
        if event.kind == "episode" and threading.current_thread() is threading.main_thread():
            deadline = time.monotonic() + WAIT_S
            (child,) = multiprocessing.active_children() or (None,)
            while child is not None and child.exitcode is None:  # hold item 0 here until the worker failed
                assert time.monotonic() < deadline, "the worker did not fail"
                time.sleep(0.05)

    with pytest.raises(FileExistsError, match="0001-"):
        generate(four, out, episodes_per_problem=2, envs=1, workers=2, seed=3, progress=progress, **one)
    assert sorted(p.parent.name[:4] for p in out.glob(".shards/*/done.json")) == ["0000"]  # nothing after it
    blocker.unlink()
    generate(four, out, episodes_per_problem=2, envs=1, workers=2, seed=3)
    assert _outputs(out) == reference


_CHILD = """
import dataclasses, json, sys, threading
from demoforge.execute import generate

paths, out = json.loads(sys.argv[1]), sys.argv[2]
def progress(event):
    if threading.current_thread() is not threading.main_thread():
        with open(out + ".worker-events", "a") as f:
            f.write(json.dumps(dataclasses.asdict(event)) + "\\n")
if __name__ == "__main__":
    generate(paths, out, episodes_per_problem=2, envs=1, workers=2, seed=3, progress=progress, problems_per_process=1)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_parent_takes_its_workers_and_the_run_resumes(four, reference, tmp_path):
    out = tmp_path / "run"
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    child = subprocess.Popen([sys.executable, str(script), json.dumps([str(p) for p in four]), str(out)],
                             env={**os.environ, "MUJOCO_GL": "egl"})
    events = Path(str(out) + ".worker-events")
    deadline = time.monotonic() + WAIT_S
    while not (events.is_file() and events.read_text()):  # the worker has run the first episode of an item
        assert child.poll() is None and time.monotonic() < deadline, "the worker ran no episode"
        time.sleep(0.01)
    problem = json.loads(events.read_text().splitlines()[0])["item"]
    workers = spawned_children(child.pid)
    assert workers
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    wait_gone(workers, deadline)
    assert not list(out.glob(f".shards/*-{problem}/done.json"))  # killed inside the item, not after it
    assert not (out / "success").exists()
    generate(four, out, episodes_per_problem=2, envs=1, workers=2, seed=3)
    assert _outputs(out) == reference


def test_a_script_without_a_main_guard_fails_instead_of_hanging(four, tmp_path):
    """A spawned worker re-runs an unguarded script and dies in its start-up: that is an
    ExecuteError here, not a parent blocked for ever writing the run to a dead child."""
    out = tmp_path / "run"
    script = tmp_path / "unguarded.py"
    script.write_text("import json, sys\nfrom demoforge.execute import generate\n"
                      "generate(json.loads(sys.argv[1]), sys.argv[2], episodes_per_problem=1, envs=1, workers=2, seed=3)\n")
    done = subprocess.run([sys.executable, str(script), json.dumps([str(p) for p in four]), str(out)],
                          env={**os.environ, "MUJOCO_GL": "egl"}, capture_output=True, text=True, timeout=SUBPROCESS_S)
    assert done.returncode != 0
    assert "ExecuteError: generate worker" in done.stderr and "died (exit code 1)" in done.stderr
    assert "generate was started by a worker process while it imported the main script" in done.stderr
    assert "already final" not in done.stderr  # the worker ran no item of its own


def test_workers_started_before_a_bad_input_is_found_are_stopped(tmp_path):
    """The workers start importing before the problems load; a bad input stops them too."""
    with pytest.raises(ExecuteError, match="nope.pddl"):
        generate([str(tmp_path / "nope.pddl")], tmp_path / "run", episodes_per_problem=1, workers=2)
    assert multiprocessing.active_children() == []


def test_a_run_stopped_between_a_final_shard_and_its_tally_resumes_to_the_same_summary(four, reference, tmp_path,
                                                                                       monkeypatch):
    """A kill after an item's shards were finalized but before its done.json was written (CI caught
    it once: the resumed summary counted none of that problem's episodes, the data was right)."""
    from demoforge.execute import shards

    out = tmp_path / "run"
    real = shards.write_json_atomic

    def stop_before_the_tally(path, data):
        if Path(path).name == "done.json":
            raise KeyboardInterrupt("killed between the shards and done.json")
        real(path, data)

    monkeypatch.setattr(shards, "write_json_atomic", stop_before_the_tally)
    with pytest.raises(KeyboardInterrupt):
        generate(four, out, episodes_per_problem=2, envs=1, workers=1, seed=3, problems_per_process=1)
    monkeypatch.setattr(shards, "write_json_atomic", real)
    first = out / ".shards" / "0000-pnp-all-0000"
    assert (first / "success" / "meta" / "info.json").is_file() and not (first / "done.json").exists()
    generate(four, out, episodes_per_problem=2, envs=1, workers=1, seed=3)
    assert _outputs(out) == reference
