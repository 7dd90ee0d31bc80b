"""The problem a run executes: a parsed PDDL problem, its scene sidecar, its arm and, when it came
from a scene package, that package's entry and robot-start windows.

execute builds Problems from problem files and packages (`demoforge.execute.problems`), the family
env from generated text (`demoforge.gym.family`), and replay from a raw dataset's scene inputs
(`demoforge.replay.recorded_problem`); `build_task_scene` builds its scenes.
"""

from __future__ import annotations

from dataclasses import dataclass

from demoforge.randomize.robot_start import RobotStartParams
from demoforge.scenes.load import SceneProblem
from demoforge.sim import RobotCard, panda_card
from demoforge.tasks import SceneParams, Task


@dataclass(frozen=True, eq=False)
class Problem:
    """One problem a run executes."""

    name: str  # PDDL problem name (unique within a run)
    task: Task  # parsed problem
    params: SceneParams  # its scene sidecar
    problem_text: str  # PDDL problem text as read (recorded in meta/demoforge/scenes/)
    source: str  # the file or package it came from
    package: SceneProblem | None = None  # set when it came from a scene package
    package_root: str | None = None  # that package's folder
    robot: RobotCard | None = None  # the arm of its scenes; None = the built-in Panda
    robot_start: RobotStartParams | None = None  # windows of each episode's drawn arm start (PDDL input); None = home


def problem_robot(problem: Problem) -> RobotCard:
    """The robot card of `problem`'s scenes."""
    return problem.robot or panda_card()
