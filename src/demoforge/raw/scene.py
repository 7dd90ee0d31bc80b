"""A raw dataset's scene inputs: per problem, what rebuilds its models with a scene draw.

`meta/demoforge/scenes/<problem>.json` holds the PDDL problem and domain text, the
scene sidecar and the robot card (`scene_inputs` writes it, `recorded_problem` reads it back
as a `Problem`); with an episode's `scene_draw` record the scene builder, a pure function of
those, rebuilds the very model the episode was stepped in (`demoforge.replay`). A file
without `robot` was written before cards were recorded, when every scene had the built-in arm.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from demoforge.dataset.layout import write_json_atomic
from demoforge.raw.schema import SCENES_DIR, RawError
from demoforge.tasks import SceneParams, Task, parse_task, scene_from_json
from demoforge.tasks.scene import scene_to_json

if TYPE_CHECKING:
    from demoforge.envs import EnvProblem
    from demoforge.randomize.robot_start import RobotStartParams
    from demoforge.sim import RobotCard

SCENE_SCHEMA = "demoforge.execute.scene/1"  # the name it was first written under; kept so old datasets read


@dataclass(frozen=True, eq=False)
class Problem:
    """One problem a run executes."""

    name: str  # PDDL problem name (unique within a run)
    task: Task  # parsed problem
    params: SceneParams  # its scene sidecar
    problem_text: str  # PDDL problem text as read (recorded in meta/demoforge/scenes/)
    source: str  # the file or package it came from
    package: EnvProblem | None = None  # set when it came from an environment package
    package_root: str | None = None  # that package's folder
    robot: RobotCard | None = None  # the arm of its scenes; None = the built-in Panda
    robot_start: RobotStartParams | None = None  # windows of each episode's drawn arm start (PDDL input); None = home


def problem_robot(problem: Problem) -> RobotCard:
    """The robot card of `problem`'s scenes."""
    from demoforge.sim import panda_card  # lazy: raw imports no simulator

    return problem.robot or panda_card()


def scene_inputs(problem: Problem) -> dict:
    """meta/demoforge/scenes/<problem>.json: what rebuilds the problem's models with a draw."""
    from demoforge.sim import card_to_dict  # lazy: raw imports no simulator

    return {"schema": SCENE_SCHEMA, "problem": problem.name, "problem_pddl": problem.problem_text,
            "domain_pddl": problem.task.domain_text, "domain_name": problem.task.domain_name,
            "scene_sidecar": json.loads(scene_to_json(problem.params)), "source": problem.source,
            "robot": card_to_dict(problem_robot(problem))}


def write_scene_inputs(root: str | Path, problems: list[Problem]) -> None:
    """Write the scene inputs of each distinct problem under `root`/meta/demoforge/scenes/."""
    folder = Path(root) / SCENES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for p in {p.name: p for p in problems}.values():
        write_json_atomic(folder / f"{p.name}.json", scene_inputs(p))


def recorded_problem(root: str | Path, name: str, cache: dict | None = None) -> Problem:
    """Problem `name` of a raw dataset, rebuilt from meta/demoforge/scenes/<name>.json.

    `cache` (a dict the caller keeps) skips re-parsing a problem already rebuilt."""
    if cache is not None and name in cache:
        return cache[name]
    file = Path(root) / SCENES_DIR / f"{name}.json"
    if not file.is_file():
        raise RawError(f"{file}: missing; the scene inputs of problem {name!r} are needed to rebuild its model")
    inputs = json.loads(file.read_text(encoding="utf-8"))
    task = parse_task(inputs["problem_pddl"], domain_text=inputs["domain_pddl"], problem_file=str(file),
                      domain_file=str(file))
    params = scene_from_json(json.dumps(inputs["scene_sidecar"]), file=str(file))
    robot = None
    if inputs.get("robot") is not None:
        from demoforge.sim import card_from_dict  # lazy: raw imports no simulator

        robot = card_from_dict(inputs["robot"], where=f"{file}: robot")
    problem = Problem(name, task, params, inputs["problem_pddl"], str(file), robot=robot)
    if cache is not None:
        cache[name] = problem
    return problem
