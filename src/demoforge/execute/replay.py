"""Rebuilding a recorded episode's model and replaying its recorded physics states.

    scene = episode_scene(root, 3)          # the compiled model episode 3 ran in
    for state in replay_states(root, 3):    # puts each recorded tick's state into scene.data
        ...                                  # (render, measure, compare)

The model comes from meta/demoforge/scenes/<problem>.json (PDDL problem and domain text,
scene sidecar) and the episode's `demoforge/scene_draw`; the scene builder is a pure
function of those, so the rebuilt model is the one that was stepped; a recorded physics
randomization draw (`demoforge/randomization`) is applied to it the same way. A sim.state row is
the full integration state before that tick's command.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from demoforge.dataset import open_dataset
from demoforge.dataset.layout import DEMOFORGE_META_DIR
from demoforge.envs.scene import build_task_scene
from demoforge.execute import schema
from demoforge.execute.problems import ExecuteError, Problem
from demoforge.execute.randomization import apply_draw
from demoforge.randomize.scene import draw_from_dict
from demoforge.sim import Scene, restore, state_size
from demoforge.tasks import parse_task, scene_from_json


def _extra(row: dict, name: str):
    raw = row.get(f"demoforge/{name}")
    if raw is None:
        raise ExecuteError(f"episode {row.get('episode_index')}: no demoforge/{name} record; not a raw execute dataset")
    return json.loads(raw) if isinstance(raw, str) else raw


def recorded_problem(root: str | Path, name: str, cache: dict | None = None) -> Problem:
    """Problem `name` of a raw dataset, rebuilt from meta/demoforge/scenes/<name>.json.

    `cache` (a dict the caller keeps) skips re-parsing a problem already rebuilt."""
    if cache is not None and name in cache:
        return cache[name]
    file = Path(root) / DEMOFORGE_META_DIR / "scenes" / f"{name}.json"
    if not file.is_file():
        raise ExecuteError(f"{file}: missing; the scene inputs of problem {name!r} are needed to rebuild its model")
    inputs = json.loads(file.read_text(encoding="utf-8"))
    task = parse_task(inputs["problem_pddl"], domain_text=inputs["domain_pddl"], problem_file=str(file),
                      domain_file=str(file))
    params = scene_from_json(json.dumps(inputs["scene_sidecar"]), file=str(file))
    problem = Problem(name, task, params, inputs["problem_pddl"], str(file))
    if cache is not None:
        cache[name] = problem
    return problem


def episode_scene(root: str | Path, episode_index: int) -> Scene:
    """The scene (compiled model, fresh data) episode `episode_index` of `root` ran in."""
    root = Path(root)
    reader = open_dataset(root)
    row = reader.episode(episode_index)
    problem = recorded_problem(root, _extra(row, "problem"))
    task, params = problem.task, problem.params
    draw = draw_from_dict(_extra(row, "scene_draw"), file=f"{root} episode {episode_index}")
    scene, _ = build_task_scene(task, params, draw)
    randomization = _extra(row, "randomization") if row.get("demoforge/randomization") is not None else None
    if randomization is not None:
        scene = apply_draw(scene, randomization)
    return scene


def replay_states(root: str | Path, episode_index: int, scene: Scene | None = None) -> Iterator[Scene]:
    """Restore each recorded tick's physics state into `scene` (default: `episode_scene`) and
    yield the scene; kinematics are current after each restore."""
    scene = scene or episode_scene(root, episode_index)
    states = open_dataset(root).read_episode(episode_index, [schema.SIM_STATE])[schema.SIM_STATE]
    n = state_size(scene.model)
    if states.shape[1] != n:
        raise ExecuteError(f"{root} episode {episode_index}: sim.state rows have {states.shape[1]} values, the rebuilt "
                           f"model needs {n}; the model differs from the recorded one")
    for row in states:
        restore(scene.model, scene.data, row)
        yield scene
