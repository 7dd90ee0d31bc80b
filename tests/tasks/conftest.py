"""Small inline PDDL used across the task tests."""

import pytest

from demoforge.tasks import domain_text, parse_task, static_facts
from demoforge.tasks import package as registry
from demoforge.tasks.pddl_text import problem_to_pddl

BLOCKS = domain_text("blocks")


def blocks_problem(*, objects, init, goal: str, name: str = "p") -> str:
    """A blocks problem; `objects` are (name, type) pairs, init gets the static facts."""
    return problem_to_pddl(name=name, domain_name="demoforge-blocks", objects=objects,
                           init=[*init, *static_facts()], goal=goal)


def upright(*blocks):
    return [a for b in blocks for a in (("face_up", b, "pz"), ("yaw", b, "yaw0"))]


@pytest.fixture
def tower_task():
    """a on b on c; goal: c on b on a, a in region left, b flipped to nz."""
    text = blocks_problem(
        objects=[("a", "block"), ("b", "block"), ("c", "block"), ("left", "region")],
        init=[("hand_empty",), ("on", "a", "b"), ("on", "b", "c"), ("on_table", "c"), ("clear", "a"),
              *upright("a", "b", "c")],
        goal="(and (on c b) (on b a) (in_region a left) (face_up b nz))",
    )
    return parse_task(text, domain_text=BLOCKS, problem_file="tower.pddl", domain_file="blocks.pddl")


@pytest.fixture
def isolated(monkeypatch):
    """The registry as it was before the test (packages loaded by a test do not leak into others)."""
    registry.packages()
    monkeypatch.setattr(registry, "_PACKAGES", dict(registry._PACKAGES))
    monkeypatch.setattr(registry, "_LOADED", [])
    monkeypatch.setenv(registry.ENV_VAR, "")
