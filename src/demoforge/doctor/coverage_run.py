"""Where coverage episodes start and how they are run and recorded.

Two kinds of input. A state/action dataset (observation.state, action only): every episode
starts at home in an empty scene with the robot card's arm. A raw execute dataset
(`demoforge.raw.schema`): coverage episode k starts from input episode k mod N, in that
episode's rebuilt scene (`raw.replay.record_scene`) at its first recorded state, and is
recorded with the execute recorder: sim.state, symbolic.state (the atoms, evaluated every
tick), raw_command, and plan.operator / plan.phase = -1 (no operator runs: the schema's
"none"). Either way the episodes run in the slots of one VecSimEnv at the dataset's fps.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from demoforge.dataset.keys import ACTION, STATE
from demoforge.dataset.layout import INDEX_FEATURE_NAMES, DatasetInfo
from demoforge.doctor.coverage_plan import CoverageError, PlannedEpisode
from demoforge.raw import EpisodeRecord
from demoforge.raw.schema import SIM_STATE, SYMBOLIC_STATE, read_vocab

GRIPPER_OPEN = 0.0  # closedness commanded throughout: coverage moves the arm, it grasps nothing


def is_raw(info: DatasetInfo) -> bool:
    return SIM_STATE in info.features


@dataclass
class RawStart:
    """A raw input episode's scene at its first recorded state, with the task's symbol binding."""

    scene: Any  # demoforge.sim.Scene
    binding: Any  # demoforge.symbolic.Binding


def raw_start(root: Path, reader, episode: int) -> RawStart:
    from demoforge.raw.replay import record_scene
    from demoforge.raw.scene import recorded_problem
    from demoforge.sim import restore
    from demoforge.symbolic.binding import bind_symbols

    record = EpisodeRecord.from_row(reader.episode(episode))
    problem = recorded_problem(root, record.problem)
    scene, _ = record_scene(problem, record, where=f"{root} episode {episode}")
    restore(scene.model, scene.data, reader.read_episode(episode, [SIM_STATE])[SIM_STATE][0])
    return RawStart(scene, bind_symbols(scene, problem.task, problem.params))


def home_start(card):
    from demoforge.sim import SceneSpec, build_scene

    return build_scene(SceneSpec(robot=card))  # reset to the card's home pose


def raw_layout(root: Path, info: DatasetInfo, card):
    """The input's RunLayout, read back from its features and meta/demoforge/vocab.json."""
    from demoforge.raw.layout import RunLayout

    vocab = read_vocab(root, required=True)
    layout = RunLayout(tuple(info.features[SYMBOLIC_STATE].names), tuple(vocab["operators"]),
                       tuple(vocab["phases"]), tuple(card.arm_joints), card.controller,
                       int(info.features[SIM_STATE].shape[0]), int(info.fps), card.name)
    user = {k: f for k, f in info.features.items() if k not in INDEX_FEATURE_NAMES}
    mine = layout.features()
    wrong = sorted(k for k in set(user) | set(mine) if user.get(k) != mine.get(k))
    if wrong:
        raise CoverageError(f"{root}: features {wrong} differ from the raw dataset contract for robot "
                            f"{card.name!r}; coverage cannot write episodes that merge with it")
    return layout


def execute(planned: list[PlannedEpisode], starts, fps: int, envs: int, seed: int,
            layout=None) -> list[dict[str, np.ndarray]]:
    """Run every planned episode in VecSimEnv. `starts(k)` gives episode k's start (a Scene, or a
    RawStart when `layout` is given); returns each episode's columns in order."""
    from demoforge.execute import SimTask, VecSimEnv

    paths = [p.path for p in planned]
    max_ticks = max(len(p) for p in paths)
    task = SimTask("coverage", lambda e, run_seed, rng: starts(e), lambda scene, ctx: False, max_ticks=max_ticks,
                   terminate_on_success=False)
    env = VecSimEnv([task], num_envs=min(envs, len(planned)), episodes=len(planned), seed=seed,
                    control_hz=float(fps))
    obs, _ = env.reset()
    recorders: dict[int, Any] = {}
    rows: dict[int, list] = {e: [] for e in range(len(planned))}
    out: dict[int, dict[str, np.ndarray]] = {}
    n_arm = len(planned[0].q_goal)
    while not env.exhausted:
        actions = np.zeros((env.num_envs, n_arm + 1))
        for i, ident in enumerate(env.ids):
            if ident is None:
                continue
            e, t = ident[1], int(env.ticks[i])
            if t >= len(paths[e]):  # shorter than the longest: end it here
                out[e] = _columns(recorders.pop(e, None), rows.pop(e, []))
                env.finish(i)
                ident = env.ids[i]
                if ident is None:
                    continue
                e, t = ident[1], int(env.ticks[i])
                obs = env.observe()
            actions[i, :-1], actions[i, -1] = paths[e][t], GRIPPER_OPEN
            if layout is not None:
                from demoforge.execute.record import EpisodeRecorder
                from demoforge.symbolic import abstract

                ctx = env.contexts[i]
                rec = recorders.setdefault(e, EpisodeRecorder(layout, ctx.scene))
                rec.record(abstract(ctx.scene.model, ctx.scene.data, ctx.binding), paths[e][t], GRIPPER_OPEN, -1, -1)
            else:
                rows[e].append((obs[STATE][i].copy(), actions[i].copy()))
        finished = [(i, ident[1]) for i, ident in enumerate(env.ids) if ident is not None
                    and env.ticks[i] + 1 >= env.tasks[0].max_ticks]
        obs, *_ = env.step(actions)
        for _, e in finished:
            out[e] = _columns(recorders.pop(e, None), rows.pop(e, []))
    return [out[e] for e in range(len(planned))]


def _columns(recorder, rows: list) -> dict[str, np.ndarray]:
    if recorder is not None:
        return recorder.columns()
    return {STATE: np.stack([r[0] for r in rows]).astype(np.float32),
            ACTION: np.stack([r[1] for r in rows]).astype(np.float32)}


def raw_extras(source_row: dict[str, Any], planned: PlannedEpisode, seed: int) -> dict[str, Any]:
    """The per-episode records of a coverage episode in a raw dataset."""
    source = EpisodeRecord.from_row(source_row)
    # What replay needs to rebuild the source's scene is kept; nothing of its run is.
    return EpisodeRecord(source.problem, {"run_seed": seed, "coverage_episode": planned.index}, source.scene_draw,
                         source.env_package, source.reset_state, source.randomization,
                         more={"coverage": planned.to_json()}).to_extras()
