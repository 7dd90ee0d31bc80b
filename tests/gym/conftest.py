"""Expert demos of two pnp train problems, generated as the family env draws them, and their bake."""

from pathlib import Path

import pytest

from demoforge.convert import BakeConfig, bake
from demoforge.execute import generate
from demoforge.replay import EPISODE_MODELS
from demoforge.tasks import generate_family, write_tasks


@pytest.fixture(scope="session")
def family_run(tmp_path_factory) -> Path:
    """`tasks gen pnp --problems 2 --task-seed 0 --split train` then `generate --episodes-per-problem 2 --seed 0`."""
    tasks = tmp_path_factory.mktemp("family")
    paths = write_tasks(generate_family("pnp", count=2, seed=0, split="train"), tasks)
    problems = sorted(p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl")
    out = tasks / "run"
    summary = generate(problems, out, episodes_per_problem=2, envs=1, seed=0)
    assert summary.successes == 4
    return out


@pytest.fixture(scope="session")
def family_baked(family_run, tmp_path_factory) -> Path:
    """The run baked to joint_target at 15 Hz with the environment state and two kept columns."""
    out = tmp_path_factory.mktemp("baked") / "pnp"
    return bake([family_run], out, BakeConfig(control_freq=15, environment_state=True,
                                              keep=("plan.operator", "symbolic.state")), models=EPISODE_MODELS)
