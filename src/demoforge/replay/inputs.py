"""A problem's scene inputs, both ways: what execute records of each problem it runs
(`scene_inputs`, written with the raw dataset by `execute.layout.write_raw_meta`), and the
problem replay rebuilds from them (`recorded_problem`). The file is the format's
(`demoforge.raw.scene.SceneInputs`); the robot card in it becomes a `RobotCard` here.
"""

from __future__ import annotations

import json
from pathlib import Path

from demoforge.raw.scene import SceneInputs, read_scene_inputs
from demoforge.raw.schema import SCENES_DIR
from demoforge.scenes.problem import Problem, problem_robot
from demoforge.sim import card_from_dict, card_to_dict
from demoforge.tasks import parse_task, scene_from_json
from demoforge.tasks.scene import scene_to_json


def scene_inputs(problem: Problem) -> SceneInputs:
    """What rebuilds `problem`'s models with a draw (meta/demoforge/scenes/<problem>.json)."""
    return SceneInputs(problem.name, problem.problem_text, problem.task.domain_text, problem.task.domain_name,
                       json.loads(scene_to_json(problem.params)), problem.source,
                       card_to_dict(problem_robot(problem)))


def recorded_problem(root: str | Path, name: str, cache: dict | None = None) -> Problem:
    """Problem `name` of a raw dataset, rebuilt from meta/demoforge/scenes/<name>.json.

    `cache` (a dict the caller keeps) skips re-parsing a problem already rebuilt."""
    if cache is not None and name in cache:
        return cache[name]
    inputs = read_scene_inputs(root, name)
    file = str(Path(root) / SCENES_DIR / f"{name}.json")
    task = parse_task(inputs.problem_pddl, domain_text=inputs.domain_pddl, problem_file=file, domain_file=file)
    params = scene_from_json(json.dumps(inputs.scene_sidecar), file=file)
    robot = None if inputs.robot is None else card_from_dict(inputs.robot, where=f"{file}: robot")
    problem = Problem(name, task, params, inputs.problem_pddl, file, robot=robot)
    if cache is not None:
        cache[name] = problem
    return problem
