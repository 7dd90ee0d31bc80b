"""The domain library: PDDL domains shipped as package data, looked up by name."""

from importlib import resources
from pathlib import Path

from demoforge.errors import TaskError

# Library name -> file under demoforge/tasks/domains/.
DOMAINS: dict[str, str] = {
    "blocks": "blocks.pddl",
}


def domain_path(name: str) -> Path:
    """Path of the shipped domain `name` (a key of `DOMAINS`)."""
    if name not in DOMAINS:
        raise TaskError(f"unknown domain {name!r}; the library has: {', '.join(sorted(DOMAINS))}")
    path = resources.files("demoforge.tasks").joinpath("domains", DOMAINS[name])
    return Path(str(path))


def domain_text(name: str) -> str:
    """PDDL text of the shipped domain `name`."""
    return domain_path(name).read_text(encoding="utf-8")
