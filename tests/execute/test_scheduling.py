"""generate's worker slots: items taken one at a time by this process and spawned workers
(both take part, each item runs once), the same bytes as one worker, and a worker killed
mid-item reported as such, its run resumed to the same bytes."""

import multiprocessing
import os
import signal
import threading
import time

import pytest

from demoforge.execute import ExecuteError, generate

from .conftest import problem_files
from .test_generate import _outputs

pytestmark = pytest.mark.slow  # spawns workers


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    """Four pick-and-place problems: more items than slots."""
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
        if event[0] != "item":
            return
        here = threading.current_thread() is threading.main_thread()  # worker events arrive on the listener
        ran["here" if here else "worker"].append(event[1])
        if here and len(ran["here"]) == 1:  # hold this slot until the worker has finished an item
            deadline = time.monotonic() + 120
            while len(list(out.glob(".shards/*/done.json"))) < 2:
                assert time.monotonic() < deadline, "the worker finished no item"
                time.sleep(0.05)

    generate(four, out, episodes_per_problem=2, envs=3, workers=2, seed=3, progress=progress)
    assert ran["here"][0] == "pnp-all-0000"  # this process starts while the worker imports
    assert ran["worker"]
    assert sorted(ran["here"] + ran["worker"]) == [f"pnp-all-{k:04d}" for k in range(4)]
    assert _outputs(out) == reference


def test_a_killed_worker_is_reported_and_its_run_resumes(four, reference, tmp_path):
    out = tmp_path / "run"
    killed = []

    def progress(event):
        here = threading.current_thread() is threading.main_thread()
        if event[0] == "episode" and not here and not killed:  # the worker is inside an item
            (child,) = multiprocessing.active_children()
            os.kill(child.pid, signal.SIGKILL)
            killed.append(event[1])

    with pytest.raises(ExecuteError, match="died .*rerun the same command"):
        generate(four, out, episodes_per_problem=2, envs=1, workers=2, seed=3, progress=progress)
    assert killed and not (out / "success").exists()
    generate(four, out, episodes_per_problem=2, envs=1, workers=2, seed=3)
    assert _outputs(out) == reference
