"""The executor a run's backend names (`pipeline.execution.executor_for`), without starting Ray."""

from __future__ import annotations

import sys

import pytest

from demoforge.pipeline import PipelineError
from demoforge.pipeline.execution import ProblemLogs, executor_for
from demoforge.stage import ProgressEvent


def test_local_leaves_the_pool_to_each_stage():
    with executor_for("local") as executor:
        assert executor is None  # each stage sizes its own LocalExecutor to its work items


def test_an_unknown_backend_lists_the_backends():
    with pytest.raises(PipelineError, match=r"unknown backend 'slurm'; backends: local, ray"):
        with executor_for("slurm"):
            pass


def test_ray_without_ray_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(PipelineError, match=r"backend 'ray' needs Ray: pip install 'demoforge\[ray\]'"):
        with executor_for("ray"):
            pass


def test_problem_logs_get_a_line_per_episode_and_item(tmp_path):
    logs = ProblemLogs(tmp_path / "logs")
    logs(ProgressEvent("generate", "episode", "p0", success=True))
    logs(ProgressEvent("generate", "episode", "p0", success=False, failure="grasp"))
    logs(ProgressEvent("generate", "item", "p0"))
    assert (tmp_path / "logs" / "p0.log").read_text() == "success\nfailure (grasp)\nproblem done\n"
