"""The options set once for a run (the run config's top level) and given to every stage that
takes them: seed, workers, robot, robot_start and task packages (`shared=True` fields)."""

from __future__ import annotations

from typing import Any

from demoforge.fields import option


def _robot_start(value: Any, where: str) -> dict | None:
    """`robot_start` as stored: the full windows (true = the defaults; a path = a spec file), or None."""
    # lazy: the robot start windows (the simulator), kept off `demoforge --help`
    from demoforge.randomize.robot_start import load_robot_start, params_from_dict, params_to_dict

    if value is False:
        return None
    if isinstance(value, str):
        return params_to_dict(load_robot_start(value))
    return params_to_dict(params_from_dict(value, where=where))


def robot_start_option():
    return option(None, "Each reset state's (or PDDL episode's) arm starts at a pose drawn from windows instead of "
                        "home: --robot-start (the defaults, README 'Robot start') or --robot-start-spec FILE.yaml "
                        "(RobotStartParams fields); YAML: true or a mapping.", kind="mapping", shared=True,
                  normalize=_robot_start)


def _task_packages(value, where: str) -> tuple[str, ...]:
    """Load each task package as the option is read, so every later field (a family's name) and
    stage sees what it brings."""
    from demoforge.tasks.package import load_package  # lazy: the task registry, kept off `demoforge --help`

    for spec in value:
        load_package(spec)
    return tuple(value)


def task_packages_option():
    return option((), "Task package to load before anything else: a .py file or a module that defines PACKAGE "
                      "(demoforge.taskapi); repeatable.", flag="--task-package", shared=True, normalize=_task_packages,
                  metavar="SPEC")
