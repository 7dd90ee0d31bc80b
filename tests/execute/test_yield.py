"""Yield on every shipped family with the default scene randomization (slow: minutes).

20 attempted episodes per family (5 generated problems x 4 episodes); at least 95% must
succeed and every failure must carry a cause of a known kind."""

import json

import pytest

from demoforge.dataset import open_dataset
from demoforge.execute import generate

from .conftest import problem_files

FAMILIES = ("stack_three", "unstack", "pnp", "flip", "rotate")
KINDS = {"planning", "ik", "collision", "physics", "timeout"}


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_family_yield_is_at_least_95_percent(family, tmp_path):
    paths = problem_files(tmp_path / "tasks", family, 5)
    summary = generate(paths, tmp_path / "run", episodes_per_problem=4, envs=4, seed=5)
    causes = []
    if summary.roots["failure"] is not None:
        reader = open_dataset(summary.roots["failure"])
        for i in reader.episode_indices:
            causes.append(json.loads(reader.episode(i)["demoforge/failure"]))
    print(f"{family}: {summary.successes}/{summary.episodes}; failures {summary.failure_kinds()}; {causes}")
    assert len(causes) == summary.episodes - summary.successes
    assert all(c["kind"] in KINDS and c["message"] for c in causes)
    assert summary.successes >= 0.95 * summary.episodes
