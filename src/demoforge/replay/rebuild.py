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

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from demoforge.dataset import DatasetReader, open_dataset
from demoforge.randomize.scene import draw_from_dict
from demoforge.raw import schema
from demoforge.raw.envstate import ObjectLayout, environment_state, layout_of
from demoforge.raw.episode import EpisodeRecord, own_states
from demoforge.replay.inputs import recorded_problem
from demoforge.scenes.problem import Problem
from demoforge.scenes.randomization import apply_draw
from demoforge.scenes.scene import build_task_scene
from demoforge.sim import Scene, restore, state_size, tcp_positions
from demoforge.symbolic import Binding
from demoforge.tasks import goal_atoms


def record_scene(problem: Problem, record: EpisodeRecord, *, where: str = "episode") -> tuple[Scene, Binding]:
    """The scene (compiled model, fresh data) an episode of `problem` with `record` ran in, its
    scene draw built and its physics randomization draw applied, and the task's symbols bound to it."""
    draw = draw_from_dict(record.scene_draw, file=where)
    scene, binding = build_task_scene(problem.task, problem.params, draw, card=problem.robot)
    if record.randomization is not None:
        scene = apply_draw(scene, record.randomization)
    return scene, binding


def recorded_environment_state(root: str | Path, record: EpisodeRecord, sim_state: np.ndarray,
                               cache: dict | None = None, *, kind: str = "objects") -> tuple[np.ndarray, ObjectLayout]:
    """((n, width) environment state, its layout: object names, feature names) of the recorded `sim_state` rows (n, n_state)
    of an episode of `root` with `record` (`demoforge.raw.envstate`, of `kind`), from its rebuilt model."""
    problem = recorded_problem(root, record.problem, cache)
    scene, binding = record_scene(problem, record, where=str(root))
    layout = layout_of(kind, scene, binding, goal_atoms(problem.task))
    qpos = np.asarray(sim_state)[:, 1:1 + scene.model.nq]  # an integration snapshot: time, then qpos
    return environment_state(layout, qpos, tcp_positions(scene.model, scene.robot, qpos)), layout


def episode_scene(root: str | Path, episode_index: int, cache: dict | None = None) -> Scene:
    """The scene (compiled model, fresh data) episode `episode_index` of `root` ran in.
    `cache`: see `recorded_problem`."""
    record = EpisodeRecord.from_row(open_dataset(root).episode(episode_index))
    problem = recorded_problem(root, record.problem, cache)
    return record_scene(problem, record, where=f"{root} episode {episode_index}")[0]


def episode_states(root: str | Path, episode_index: int, scene: Scene, reader: DatasetReader | None = None) -> np.ndarray:
    """(T, n) the recorded physics states of episode `episode_index` of `root`, cut to the
    episode's own width (`own_states`), checked against `scene`'s model (n values).
    `reader`: `root` already open (saves reading its episode table again)."""
    reader = reader or open_dataset(root)
    where = f"{root} episode {episode_index}"
    record = EpisodeRecord.from_row(reader.episode(episode_index))
    states = own_states(reader.read_episode(episode_index, [schema.SIM_STATE])[schema.SIM_STATE], record, where=where)
    n = state_size(scene.model)
    if states.shape[1] != n:
        raise schema.RawError(f"{where}: sim.state rows have {states.shape[1]} values, the rebuilt model needs {n}; "
                              "the model differs from the recorded one")
    return states


def replay_states(root: str | Path, episode_index: int, scene: Scene | None = None,
                  reader: DatasetReader | None = None) -> Iterator[Scene]:
    """Restore each recorded tick's physics state into `scene` (default: `episode_scene`) and
    yield the scene; kinematics are current after each restore. `reader`: `root` already open."""
    scene = scene or episode_scene(root, episode_index)
    for row in episode_states(root, episode_index, scene, reader):
        restore(scene.model, scene.data, row)
        yield scene
