"""Tiny problems for the execution tests: generated pick-and-place (one block) and
stack_three problems, written once per session."""

from pathlib import Path

import mujoco
import pytest

from demoforge.tasks import generate_family, write_tasks


def problem_files(folder: Path, family: str, count: int, seed: int = 11) -> list[Path]:
    paths = write_tasks(generate_family(family, count=count, seed=seed), folder)
    return [p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl"]


@pytest.fixture(scope="session")
def pnp(tmp_path_factory) -> list[Path]:
    """Two pick-and-place-in-region problems (one block each)."""
    return problem_files(tmp_path_factory.mktemp("pnp"), "pnp", 2)


@pytest.fixture(scope="session")
def rotate(tmp_path_factory) -> list[Path]:
    """Two rotate problems (one block each)."""
    return problem_files(tmp_path_factory.mktemp("rotate"), "rotate", 2)


@pytest.fixture(scope="session")
def mixed(tmp_path_factory) -> list[Path]:
    """One flip, one pnp and one unstack problem: physics states of three sizes (one block; one
    block and two regions; three blocks)."""
    base = tmp_path_factory.mktemp("mixed")
    return [p for f in ("flip", "pnp", "unstack") for p in problem_files(base / f, f, 1)]


def nudge(scene, body: str, dx: float, dy: float) -> None:
    """Move a free body sideways (a bump after release) and recompute kinematics."""
    adr = scene.model.jnt_qposadr[scene.model.body(body).jntadr[0]]
    scene.data.qpos[adr] += dx
    scene.data.qpos[adr + 1] += dy
    mujoco.mj_forward(scene.model, scene.data)
