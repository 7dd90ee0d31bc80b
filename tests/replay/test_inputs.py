"""A problem's scene inputs, recorded and rebuilt: the rebuilt problem builds the same model."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from demoforge.execute import load_problems
from demoforge.randomize.scene import sample_scene
from demoforge.raw.scene import read_scene_inputs, write_scene_inputs
from demoforge.replay import recorded_problem, scene_inputs
from demoforge.scenes import build_task_scene

PROBLEM = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "stack_three-all-0000.pddl"


def test_a_recorded_problem_rebuilds_the_model_it_was_recorded_from(tmp_path):
    (problem,) = load_problems([PROBLEM])
    write_scene_inputs(tmp_path, [scene_inputs(problem)])
    assert read_scene_inputs(tmp_path, problem.name) == scene_inputs(problem)
    cache: dict = {}
    back = recorded_problem(tmp_path, problem.name, cache)
    assert recorded_problem(tmp_path, problem.name, cache) is back  # parsed once
    assert (back.name, back.problem_text, back.robot, back.params) == (problem.name, problem.problem_text,
                                                                      problem.robot, problem.params)
    draw = sample_scene(problem.params, np.random.default_rng(0))
    a = build_task_scene(problem.task, problem.params, draw, card=problem.robot)[0]
    b = build_task_scene(back.task, back.params, draw, card=back.robot)[0]
    assert a.model.nq == b.model.nq and np.array_equal(a.model.body_pos, b.model.body_pos)
