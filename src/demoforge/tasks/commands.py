"""The options of `demoforge tasks list`, `tasks check` and `tasks plan`, one record each
(`demoforge.fields`): their flags are generated from these fields."""

from __future__ import annotations

from dataclasses import dataclass

from demoforge.fields import option
from demoforge.tasks.package import task_packages_option

DOMAIN_HELP = "Library domain name (a task package's) or a domain PDDL file."


@dataclass(frozen=True)
class TasksListConfig:
    """`demoforge tasks list`: what is installed."""

    task_packages: tuple[str, ...] = task_packages_option()
    as_json: bool = option(False, "Print JSON instead of text.", flag="--json")


@dataclass(frozen=True)
class TasksCheckConfig:
    """`demoforge tasks check`: problems against a domain."""

    task_packages: tuple[str, ...] = task_packages_option()
    domain: str = option("blocks", DOMAIN_HELP)


@dataclass(frozen=True)
class PlanConfig:
    """`demoforge tasks plan`: one problem through the planner chain."""

    task_packages: tuple[str, ...] = task_packages_option()
    domain: str = option("blocks", DOMAIN_HELP)
    budget: float = option(1.0, "pymimir time budget before Fast Downward [s].", range=(0.0, 3600.0), low_open=True)
