"""A tiny pick-and-place problem and a two-episode expert dataset of it, once per session."""

from pathlib import Path

import pytest

from demoforge.execute import generate
from demoforge.tasks import generate_family, write_tasks


@pytest.fixture(scope="session")
def pnp(tmp_path_factory) -> Path:
    """One pick-and-place-in-region problem (one block; goal: (in_region white left))."""
    paths = write_tasks(generate_family("pnp", count=1, seed=11), tmp_path_factory.mktemp("pnp"))
    return next(p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl")


@pytest.fixture(scope="session")
def expert_data(pnp, tmp_path_factory) -> Path:
    """Two successful expert episodes of `pnp` (the success split of a generate run)."""
    out = tmp_path_factory.mktemp("gen") / "run"
    summary = generate([pnp], out, episodes_per_problem=2, envs=1, seed=0)
    assert summary.successes == 2
    return summary.roots["success"]
