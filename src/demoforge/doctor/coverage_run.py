"""Where coverage episodes start, how they are run and recorded, and what they are written as.

Three kinds of input (`input_layout`). A raw execute dataset (`demoforge.raw.schema`),
rendered or not: coverage episode k starts from input episode k mod N, in that episode's
rebuilt scene (`replay.record_scene`) at its first recorded state, and is recorded with
the execute recorder: sim.state, symbolic.state (the atoms, evaluated every tick),
raw_command, and plan.operator / plan.phase = -1 (no operator runs: the schema's "none");
cameras are left to `demoforge render`. A baked dataset (meta/bake.json): episodes start at
home in an empty scene with the robot card's arm, run at the bake's native rate and are
projected to its convention and rate by `demoforge.convert.project`, as bake does. Any other
dataset: the same empty-scene episodes at its fps, with the commanded joint targets and
gripper closedness as action. Either way the episodes run in the slots of one VecSimEnv.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from demoforge.convert import Episode, project
from demoforge.convert.episode import read_law
from demoforge.convert.stamp import BAKE_PATH, read_stamp
from demoforge.dataset.keys import ACTION, STATE
from demoforge.dataset.layout import INDEX_FEATURE_NAMES, DatasetInfo, Feature
from demoforge.doctor.coverage_plan import CoverageError, PlannedEpisode
from demoforge.errors import DemoforgeError
from demoforge.execute import SimTask, VecSimEnv
from demoforge.execute.layout import RunLayout
from demoforge.execute.record import EpisodeRecorder
from demoforge.raw import EpisodeRecord, own_states
from demoforge.raw.schema import CONTROLLER_PATH, SIM_STATE, SYMBOLIC_STATE, read_vocab
from demoforge.replay import record_scene, recorded_problem
from demoforge.sim import SceneSpec, build_scene, restore
from demoforge.stage.protocol import Progress, ProgressEvent
from demoforge.symbolic import abstract
from demoforge.symbolic.binding import bind_symbols

GRIPPER_OPEN = 0.0  # closedness commanded throughout: coverage moves the arm, it grasps nothing
# conventions a simulated arm's episodes can be labelled in (raw_cmd only under a joint_position law)
BAKED_CONVENTIONS = ("joint_target", "joint_pos", "joint_vel", "raw_cmd")
TARGETS = "the commanded arm joint targets [rad] and gripper closedness [0 open, 1 closed]"


@dataclass(frozen=True)
class Layout:
    """What the coverage episodes of one input are run at and written as."""

    kind: str  # "raw", "baked" or "state_action"
    run_fps: int  # control rate the episodes run at [Hz]
    fps: int  # rate they are written at [Hz]
    features: dict[str, Feature]  # the coverage dataset's per-tick features
    action: str  # what the action column means
    raw: Any = None  # the raw RunLayout the recorder writes (raw inputs)
    convention: str | None = None  # the bake's convention (baked inputs)
    joint_names: tuple[str, ...] = ()  # arm joint names of the state, for the projection
    notes: tuple[str, ...] = field(default_factory=tuple)  # what the output lacks beside the input


@dataclass
class RawStart:
    """A raw input episode's scene at its first recorded state, with the task's symbol binding."""

    scene: Any  # demoforge.sim.Scene
    binding: Any  # demoforge.symbolic.Binding


def raw_start(root: Path, reader, episode: int) -> RawStart:
    record = EpisodeRecord.from_row(reader.episode(episode))
    problem = recorded_problem(root, record.problem)
    scene, _ = record_scene(problem, record, where=f"{root} episode {episode}")
    states = reader.read_episode(episode, [SIM_STATE])[SIM_STATE][:1]
    restore(scene.model, scene.data, own_states(states, record, where=f"{root} episode {episode}")[0])
    return RawStart(scene, bind_symbols(scene, problem.task, problem.params))


def home_start(card):
    return build_scene(SceneSpec(robot=card))  # reset to the card's home pose


def raw_layout(root: Path, info: DatasetInfo, card):
    """The input's RunLayout, read back from its features (camera videos aside) and meta/demoforge/vocab.json."""
    vocab = read_vocab(root, required=True)
    mode = (read_law(root) or {}).get("mode", card.controller.mode)
    if mode != "joint_position":
        raise CoverageError(f"{root / CONTROLLER_PATH}: the input was recorded under a {mode!r} control law, and "
                            "coverage episodes of a raw dataset run joint-target paths under a joint_position law; "
                            "bake the input (e.g. --control-space joint_target) and run coverage on the baked dataset")
    layout = RunLayout(tuple(info.features[SYMBOLIC_STATE].names), tuple(vocab["operators"]),
                       tuple(vocab["phases"]), tuple(card.arm_joints), card.controller,
                       int(info.features[SIM_STATE].shape[0]), int(info.fps), card.name)
    user = {k: f for k, f in info.features.items() if k not in INDEX_FEATURE_NAMES and f.dtype != "video"}
    mine = layout.features()
    wrong = sorted(k for k in set(user) | set(mine) if user.get(k) != mine.get(k))
    if wrong:
        raise CoverageError(f"{root}: features {wrong} differ from the raw dataset contract for robot "
                            f"{card.name!r}; coverage cannot write raw episodes that render and bake like it")
    return layout


def _bake_stamp(root: Path) -> dict[str, Any] | None:
    try:
        stamp = read_stamp(root, required=False)
    except DemoforgeError as exc:
        raise CoverageError(str(exc)) from None
    return None if stamp is None else stamp.raw


def input_layout(root: Path, info: DatasetInfo, limits) -> Layout:
    """What coverage episodes for the dataset at `root` are written as (see the module docstring);
    every reason it cannot be done is reported at once."""
    # One function: every reason the layout cannot be written is collected before any is raised, and
    # the layout's fields depend on the dataset kind (raw, baked, state/action) decided midway.
    n = len(limits.names)
    problems, notes = [], []
    state = info.features.get(STATE)
    if state is None:
        problems.append(f"no {STATE!r} feature")
    elif tuple(state.shape) != (n + 1,) or state.dtype != "float32":
        problems.append(f"{STATE!r} is {state.dtype} {list(state.shape)}, expected float32 [{n + 1}] "
                        f"({n} arm joints + gripper)")
    if tuple(limits.dims) != tuple(range(n)):
        problems.append(f"arm joints sit at state dims {list(limits.dims)}, expected the first {n}")
    if limits.card is None:
        problems.append(f"joint limits come from {limits.source}, not a robot card; pass --robot with a built-in "
                        "card name or a card YAML so the episodes can be simulated")
    user = {k: f for k, f in info.features.items() if k not in INDEX_FEATURE_NAMES}
    stamp = _bake_stamp(root)
    kind = "raw" if SIM_STATE in info.features else "baked" if stamp is not None else "state_action"
    run_fps = fps = int(info.fps)
    convention = None
    if kind == "baked":
        convention, run_fps, fps = stamp["convention"], int(stamp["native_freq"]), int(stamp["control_freq"])
        if fps != info.fps:
            problems.append(f"{BAKE_PATH}: control_freq {fps} Hz but info.json fps {info.fps}; re-bake the dataset")
        mode = (stamp.get("control_law") or {}).get("mode", "joint_position")
        if convention not in BAKED_CONVENTIONS or (convention == "raw_cmd" and mode != "joint_position"):
            law = f" under a {mode!r} law" if convention == "raw_cmd" else ""
            problems.append(f"{BAKE_PATH}: convention {convention!r}{law} is not one coverage episodes can be "
                            f"labelled in ({list(BAKED_CONVENTIONS)}; raw_cmd under a joint_position law); run "
                            "coverage on the dataset it was baked from")
    if run_fps <= 0 or abs(600.0 / run_fps - round(600.0 / run_fps)) > 1e-9:
        problems.append(f"fps {run_fps} is not a whole number of 1/600 s physics steps")
    action = info.features.get(ACTION)
    if kind != "raw" and action is not None and (tuple(action.shape) != (n + 1,) or action.dtype != "float32"):
        problems.append(f"{ACTION!r} is {action.dtype} {list(action.shape)}; coverage episodes write float32 "
                        f"[{n + 1}] ({n} arm joints + gripper)")
    if problems:
        raise CoverageError(f"{root}: coverage cannot write episodes for this dataset:\n  " + "\n  ".join(problems))
    if kind == "raw":
        run = raw_layout(root, info, limits.card)
        if info.video_keys:
            notes.append(f"the input's camera videos {info.video_keys} are not made: render the coverage dataset "
                         "(`demoforge render OUT ...`) for them")
        return Layout("raw", run_fps, fps, run.features(), f"{TARGETS} (the raw contract)", raw=run,
                      notes=tuple(notes))
    names = list(state.names) if isinstance(state.names, list) else [*limits.state_names, "gripper"]
    features = {STATE: state, ACTION: action or Feature("float32", (n + 1,), names)}
    other = sorted(k for k in user if k not in features)
    if other:
        notes.append(f"the input's {other} are not made: coverage episodes run with the arm alone, in an empty "
                     "scene, without cameras")
    if kind == "baked":
        meaning = f"{convention} at {fps} Hz, labelled as `demoforge bake` labels it ({BAKE_PATH} of the input)"
        if (stamp.get("gripper") or {}).get("quantity", "closedness") != "closedness":
            notes.append("the gripper is recorded as closedness [0 open, 1 closed]; the input's is "
                         f"{stamp['gripper'].get('quantity')!r}")
    else:
        meaning = TARGETS
        notes.append(f"action: {TARGETS}; the input's action is taken to mean the same")
    return Layout(kind, run_fps, fps, features, meaning, convention=convention,
                  joint_names=tuple(names[:n]), notes=tuple(notes))


def labelled(layout: Layout, k: int, cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Coverage episode k's recorded columns as the layout writes them: a baked input's convention
    and rate through `demoforge.convert.project`, the others as recorded."""
    if layout.kind != "baked":
        return cols

    state, action = cols[STATE].astype(np.float64), cols[ACTION].astype(np.float64)
    n = len(layout.joint_names)
    ep = Episode(source=Path("coverage"), index=k, reader="demoforge_raw", fps=layout.run_fps, task="coverage",
                 time=np.arange(len(state)) / layout.run_fps, q=state[:, :n], gripper=state[:, n],
                 joint_names=layout.joint_names, target=action[:, :n], target_gripper=action[:, n],
                 raw_command=action, sim_state=None, law={"mode": "joint_position"})
    proj = project(ep, layout.convention, layout.fps)
    return {STATE: proj.state, ACTION: proj.action}


def execute(planned: list[PlannedEpisode], starts, fps: int, envs: int, seed: int,
            layout=None, *, progress: Progress | None = None) -> list[dict[str, np.ndarray]]:
    """Run every planned episode in VecSimEnv. `starts(k)` gives episode k's start (a Scene, or a
    RawStart when `layout` is given); returns each episode's columns in order, `progress` taking a
    "coverage" episode event as each one finishes."""
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
                if progress is not None:
                    progress(ProgressEvent("coverage", "episode", f"episode {e}", len(out), len(planned)))
                env.finish(i)
                ident = env.ids[i]
                if ident is None:
                    continue
                e, t = ident[1], int(env.ticks[i])
                obs = env.observe()
            actions[i, :-1], actions[i, -1] = paths[e][t], GRIPPER_OPEN
            if layout is not None:
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
            if progress is not None:
                progress(ProgressEvent("coverage", "episode", f"episode {e}", len(out), len(planned)))
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
                         sim_state_width=source.sim_state_width, more={"coverage": planned.to_json()}).to_extras()
