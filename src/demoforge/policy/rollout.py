"""Roll-outs: a policy drives a VecSimEnv and every episode is recorded as it ends.

    summary = rollout(load_policy("model.onnx"), ["tasks/pnp-all-0000.pddl"], "out/run",
                      episodes=20, envs=8, seed=0)
    summary["overall"]["success_rate"]

OUT is a raw execute dataset (the execute recorder's per-tick rows, the same meta files,
so `replay`, `eval --from-dataset` and `relabel` read it) plus SUMMARY.md and
summary.json. Per episode the columns `demoforge/success`, `partial_success`,
`completion_ratio`, `full_completion`, `alive_ratio`, `end`, `assist` and `policy` hold the metrics
(`policy.metrics`). Episodes go to the writer as they end, in canonical (problem,
episode) order, so memory holds at most the running episodes plus those finished
ahead of an earlier one.

Cameras: a policy that declares `observation.images.<camera>` observations of shape
(H, W, 3) gets that camera rendered inline each tick (RGB, the scene's own look, the state
before the tick, like `observation.state`), and the frames are recorded as that video
feature of the dataset.

Assist (`Assist(floor, steps)`): an upward force of `value(t)` times each free object's
weight, 1.0 (weightless) for the first `steps` ticks, then the `floor` for the rest; the
floor is where it drops to, not where it starts. Recorded per episode; replay applies it
the same way.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import mujoco
import numpy as np

from demoforge.dataset import DatasetWriter, Feature
from demoforge.dataset.keys import ENVIRONMENT_STATE as ENV_STATE
from demoforge.dataset.keys import IMAGES_PREFIX, camera_of, image_key
from demoforge.envs.problem import Problem, problem_robot
from demoforge.errors import DemoforgeError
from demoforge.execute.generate import run_problems
from demoforge.execute.layout import RunLayout, write_raw_meta
from demoforge.execute.problems import check_goals, start_layout_scene
from demoforge.execute.record import EpisodeRecorder, goal_words, run_layout
from demoforge.execute.vecenv import SimTask, VecSimEnv, pddl_task
from demoforge.guard import guard_output_dir
from demoforge.policy.blame import code_roots, user_error
from demoforge.policy.hdf5 import HDF5_NAME, check_output_format, write_rollout_hdf5
from demoforge.policy.like import check_convention
from demoforge.policy.stage import (
    Plan, PolicyLoad, PolicyStage, finished_run, resumable_run, run_policy_stage, summary_header,
)
from demoforge.policy.metrics import alive_ratio, completion_ratio, partial_success
from demoforge.policy.protocol import (
    EpisodeStartInfo,
    Policy,
    PolicyError,
    PolicySpaces,
    check_actions,
    check_spaces,
    env_spaces,
)
from demoforge.raw import EpisodeRecord, FailureCause, FailureKind
from demoforge.raw.envstate import environment_state, object_layout
from demoforge.render import CameraRecorder
from demoforge.sim import CameraRig, card_to_dict, snapshot, tcp_positions
from demoforge.stage.protocol import Progress, ProgressEvent
from demoforge.symbolic.predicates import fallen
from demoforge.tasks import goal_atoms
from demoforge.tasks.pddl_text import format_atom


@dataclass(frozen=True)
class Assist:
    """Object assist: `value(t)` = 1.0 for t < steps, then `floor` [fraction of weight]."""

    floor: float  # value after the warm-up, in [0, 1]
    steps: int  # ticks held at 1.0

    def __post_init__(self):
        if not 0.0 <= self.floor <= 1.0 or self.steps < 0:
            raise PolicyError(f"assist: floor {self.floor} must be in [0, 1] and steps {self.steps} >= 0")

    def value(self, tick: int) -> float:
        return 1.0 if tick < self.steps else self.floor


@dataclass(frozen=True)
class RolloutSettings:
    """Episode limits and metric parameters of a roll-out."""

    max_ticks: int = 1200  # an episode is truncated after this many control ticks (20 s: the expert with a replan)
    warmup_ticks: int = 0  # ticks excluded from alive_ratio (defaults to the assist's steps when it is larger)
    reference_ticks: int | None = None  # alive_ratio horizon [ticks]; None = max_ticks
    drop_margin: float = 0.05  # an object's lowest point this far below the table top ends the episode as dropped [m]
    control_hz: float = 60.0  # control and recording rate [Hz]
    assist: Assist | None = None

    @property
    def warmup(self) -> int:
        return max(self.warmup_ticks, self.assist.steps if self.assist else 0)

    @property
    def horizon(self) -> int:
        return self.reference_ticks or self.max_ticks


def free_bodies(model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bodies, z qpos addresses, subtree weights [N]) of the free-jointed objects."""
    joints = np.flatnonzero(model.jnt_type == mujoco.mjtJoint.mjJNT_FREE)
    bodies = model.jnt_bodyid[joints]
    weight = model.body_subtreemass[bodies] * -model.opt.gravity[2]
    return bodies, model.jnt_qposadr[joints] + 2, weight


def apply_assist(scene, assist: Assist | None, tick: int) -> None:
    if assist is None:
        return
    bodies, _, weight = free_bodies(scene.model)
    scene.data.xfrc_applied[bodies, 2] = assist.value(tick) * weight


def image_spaces(policy_obs: dict, cameras: list[str]) -> dict[str, tuple]:
    """The image observations the env offers: every scene camera, at the size the policy asks
    for when that is a valid (H, W, 3) with even H and W (video), else an ("H", "W", 3) placeholder."""
    out = {}
    for c in cameras:
        key = image_key(c)
        want = tuple(policy_obs.get(key, ()))
        ok = len(want) == 3 and want[2] == 3 and all(isinstance(v, int) and v > 0 and v % 2 == 0 for v in want[:2])
        out[key] = want if ok else ("H even", "W even", 3)
    return out


class _Episode:
    """A slot's running episode: its recorder, its camera frames and the drop check."""

    def __init__(self, env: VecSimEnv, i: int, layout: RunLayout, images: dict[str, tuple] | None = None,
                 look=None, problem: str = ""):
        self.ctx = env.contexts[i]
        self.images = images or {}
        self.frames: dict[str, list] = {k: [] for k in self.images}
        self.rig = None
        self.camera = None  # a CameraRecorder under the episode's look draw
        self.look_draw = None
        if self.images and look is not None:
            self.look_draw = look.scene_draw(self.ctx.scene, problem, self.ctx.start.episode,
                                             getattr(self.ctx, "source", None))
            self.camera = CameraRecorder(self.ctx.scene, self.look_draw, [camera_of(k) for k in self.images])
        elif self.images:
            (h, w, _), = set(self.images.values())
            self.rig = CameraRig(self.ctx.scene.model, self.ctx.scene.cameras, width=w, height=h)
        self.ident = env.ids[i]
        self.draw = env.randomization_draws[i]
        self.rec = EpisodeRecorder(layout, self.ctx.scene)
        self.start_atoms = self.ctx.atoms()  # what held before the policy acted (completion counts the rest)

    def dropped(self, margin: float) -> bool:
        """An object fell below every place the task's placement predicates could rest it (see
        `symbolic.predicates.fallen`); one merely lower than it started (unstacked) did not."""
        return bool(fallen(self.ctx.scene.data, self.ctx.binding, margin).any())

    def render(self) -> dict[str, np.ndarray]:
        """This tick's frames (also kept for the recording): under a look, the physics state
        restored into the look's render model, as the render stage replays it."""
        if self.camera is not None:
            frames = self.camera.render_state(snapshot(self.ctx.scene.model, self.ctx.scene.data))
        out = {}
        for key in self.images:
            frame = frames[key] if self.camera is not None else self.rig.rgb(self.ctx.scene.data, camera_of(key))
            self.frames[key].append(frame)
            out[key] = frame
        return out

    def close(self) -> None:
        for cam in (self.rig, self.camera):
            if cam is not None:
                cam.close()
        self.rig = self.camera = None

    def columns(self) -> dict[str, np.ndarray]:
        cols = self.rec.columns()
        for key, frames in self.frames.items():
            cols[key] = np.stack(frames[: self.rec.length])
        self.close()
        return cols


def users_code(spec: str, doing: str, policy: Policy, fn, *args):
    """`fn(*args)` of `policy`; an exception raised in the user's code is a PolicyError naming its line."""
    try:
        return fn(*args)
    except DemoforgeError:
        raise
    except (Exception, SystemExit) as exc:
        err = user_error(spec, doing, exc, roots=code_roots(getattr(policy, "inner", policy)))
        if err is None:
            raise
        raise err from exc


def _missing_top(path: Path) -> Path | None:
    """The topmost folder of `path` (itself included) that does not exist yet, or None."""
    top = None
    for p in (path, *path.parents):
        if p.exists():
            break
        top = p
    return top


# (problem, ctx, ticks) -> extra records merged into the episode's (e.g. where eval started)
ExtraFn = Callable[[Problem, object], dict]


def run_policy(policy: Policy, tasks: list[SimTask], problems: list[Problem], layout: RunLayout,
               queue: list[tuple[int, int]], out: Path, *, envs: int, seed: int, settings: RolloutSettings,
               spec: str, extra: ExtraFn | None = None, progress: Progress | None = None, randomization=None,
               look=None, stage: str = "rollout") -> None:
    """Run `queue` ((task, episode) pairs) with `policy` and record them to OUT/dataset (one
    work item of `policy.stage.PolicyStage`, which counts the summary from the merged episodes;
    `progress` takes a `stage` episode event per episode written, in queue order). `look`: a
    `policy.looks.EvalLook` the cameras render under (None: the scene's own)."""
    env_sp = env_spaces(len(layout.joint_names))
    if hasattr(policy, "bind_action_width"):
        policy.bind_action_width(env_sp.action[0])
    images: dict[str, tuple] = {}
    if any(k.startswith(IMAGES_PREFIX) for k in policy.spaces.observation):
        cameras = sorted(start_layout_scene(problems[0])[0].cameras)
        offered = image_spaces(dict(policy.spaces.observation), cameras)
        if look is not None:  # the look fixes the size; a policy that asks for another is refused below
            offered = {k: (*look.size(k), 3) if k in policy.spaces.observation else v for k, v in offered.items()}
        env_sp = PolicySpaces({**env_sp.observation, **offered}, env_sp.action)
        images = {k: tuple(v) for k, v in policy.spaces.observation.items() if k.startswith(IMAGES_PREFIX)}
    env_state = ENV_STATE in policy.spaces.observation
    if env_state:
        scene, binding = start_layout_scene(problems[0])
        width = object_layout(scene, binding, goal_atoms(problems[0].task)).width
        env_sp = PolicySpaces({**env_sp.observation, ENV_STATE: (width,)}, env_sp.action)
    check_spaces(policy.spaces, env_sp, where=f"policy {spec!r}")
    check_convention(policy, settings.control_hz, spec)
    if len(set(images.values())) > 1:
        raise PolicyError(f"policy {spec!r}: image observations {images} must share one size")
    made = _missing_top(out)  # removed again when the policy fails: nothing half-written
    out.mkdir(parents=True, exist_ok=True)
    root = out / "dataset"
    features = {**layout.features(), **{k: Feature("video", shape) for k, shape in images.items()}}
    env = VecSimEnv(tasks, envs, episodes=queue, seed=seed, control_hz=settings.control_hz,
                    randomization=randomization)
    order = {ident: k for k, ident in enumerate(queue)}
    pending: dict[int, tuple] = {}
    nxt = 0
    eps: list[_Episode | None] = [None] * envs
    objects: list = [None] * envs  # per slot: (environment-state layout, scratch MjData for the TCP's kinematics)

    def begin(i: int) -> None:
        if env.ids[i] is None:
            eps[i] = None
            return
        t = env.ids[i][0]
        eps[i] = _Episode(env, i, layout, images, look, problems[t].name)
        ctx = env.contexts[i]
        if env_state:
            objects[i] = (object_layout(ctx.scene, ctx.binding, goal_atoms(problems[t].task)),
                          mujoco.MjData(ctx.scene.model))
        users_code(spec, "reset()", policy, policy.reset, i, EpisodeStartInfo(problems[t], ctx.start.episode, ctx,
                                                                             env, layout))

    def end(i: int, ep: _Episode, success: bool, how: str) -> None:
        nonlocal nxt
        problem = problems[ep.ident[0]]
        goal = goal_atoms(problem.task)
        atoms = ep.ctx.atoms()
        ticks = ep.rec.length
        metrics = {"success": bool(success), "partial_success": partial_success(goal, atoms),
                   "completion_ratio": completion_ratio(goal, ep.start_atoms, atoms, success=success),
                   "alive_ratio": alive_ratio(ticks, success=success, cut=how == "dropped",
                                              warmup=settings.warmup, horizon=settings.horizon),
                   "end": how}
        metrics["full_completion"] = metrics["completion_ratio"] >= 1.0
        start = ep.ctx.start.records
        failure = None if success else FailureCause(FailureKind.PHYSICS if how == "dropped" else FailureKind.TIMEOUT,
                                                    f"policy episode ended: {how}")
        record = EpisodeRecord(
            problem.name, start["seed"], start["scene_draw"], start["env_package"], start["reset_state"],
            randomization=ep.draw, goal=tuple(format_atom(a) for a in goal),
            outcome="success" if success else "failure", failure=failure, sim_state_width=ep.rec.state_width,
            more={"assist": None if settings.assist is None else asdict(settings.assist), "policy": spec, **metrics},
        ).to_extras()
        if extra is not None:
            record.update(extra(problem, ep.ctx))
        if ep.look_draw is not None:
            record["look"] = ep.look_draw  # the frames can be rendered again from the states
        pending[order[ep.ident]] = (ep.columns(), goal_words(problem.task), record, problem.name, metrics)
        while nxt in pending:
            cols, task, rec, name, m = pending.pop(nxt)
            writer.add_episode(cols, task=task, extra=rec)
            nxt += 1
            if progress is not None:
                progress(ProgressEvent(stage, "episode", name, nxt, len(queue), success=bool(m["success"]),
                                       failure=None if m["success"] else str(m["end"])))

    def observe(obs: dict) -> dict:
        if not images and not env_state:
            return obs
        out = dict(obs)
        if env_state:
            out[ENV_STATE] = np.full((envs, env_sp.observation[ENV_STATE][0]), np.nan)
            for i, ep in enumerate(eps):
                if ep is not None:
                    scene = ep.ctx.scene
                    layout, scratch = objects[i]
                    tcp = tcp_positions(scene.model, scene.robot, scene.data.qpos, scratch)
                    out[ENV_STATE][i] = environment_state(layout, scene.data.qpos, tcp)
        for key, shape in images.items():
            out[key] = np.zeros((envs, *shape), np.uint8)
        for i, ep in enumerate(eps):
            if ep is not None:
                for key, frame in ep.render().items():
                    out[key][i] = frame
        return out

    try:
        # a clean exit finalizes the dataset; an exception (a kill, a bug) keeps its staging for a look
        with DatasetWriter.create(root, fps=layout.fps, features=features, robot_type=layout.robot_type) as writer:
            obs, _ = env.reset()
            for i in range(envs):
                begin(i)
            while not env.exhausted:
                active = env.active
                obs = observe(obs)
                actions = check_actions(users_code(spec, "act()", policy, policy.act, obs), active, env_sp.action,
                                        where=f"policy {spec!r}")
                # Step with exactly what is recorded (float32 columns), so every roll-out replays bit for bit.
                actions = actions.astype(np.float32).astype(np.float64)
                for i in np.flatnonzero(active):
                    ep = eps[i]
                    ep.rec.record(ep.ctx.atoms(), actions[i, :-1], actions[i, -1], -1, -1)
                    apply_assist(ep.ctx.scene, settings.assist, ep.rec.length - 1)
                obs, _, _, _, info = env.step(actions)
                refresh = False
                for i in np.flatnonzero(active):
                    ep = eps[i]
                    if info["done"][i]:
                        ok = bool(info["final_success"][i])
                        end(i, ep, ok, "success" if ok else "truncated")
                        begin(i)
                    elif ep.dropped(settings.drop_margin):
                        end(i, ep, False, "dropped")
                        env.finish(i)
                        begin(i)
                        refresh = True
                if refresh:
                    obs = env.observe()
    except BaseException as exc:
        for ep in eps:
            if ep is not None:
                ep.close()
        if isinstance(exc, DemoforgeError):  # bad input (the policy's): keep nothing; a kill or a bug keeps staging
            shutil.rmtree(made or root, ignore_errors=True)
        raise
    write_meta(root, problems, layout, {"policy": spec, "seed": seed, "settings": asdict(settings),
                                        "robot": card_to_dict(problem_robot(problems[0])),
                                        "look": None if look is None else look.label})


def write_meta(root: Path, problems: list[Problem], layout: RunLayout, run: dict, *, stage: str = "rollout") -> None:
    """meta/demoforge files of a raw execute dataset (controller, vocab, provenance, scenes)."""
    write_raw_meta(root, layout, problems, stage=stage, run=run)


def rollout_plan(inputs: tuple[str, ...], domain: str, randomization, robot, max_ticks: int, episodes: int,
                 control_hz: float) -> tuple:
    """A roll-out's (tasks, problems, layout, queue, extra), built alike in every worker."""
    problems = run_problems(list(inputs), domain=domain, randomization=randomization, robot=robot)
    layout = run_layout(problems, fps=round(control_hz))
    tasks = [pddl_task(p, max_ticks=max_ticks) for p in problems]
    queue = [(t, e) for t in range(len(problems)) for e in range(episodes)]
    return tasks, problems, layout, queue, None


def rollout(policy: Policy | str, inputs: list[str | Path], out: str | Path, *, episodes: int, envs: int = 1,
            seed: int = 0, settings: RolloutSettings = RolloutSettings(), spec: str = "?",
            domain: str = "blocks", progress: Progress | None = None, randomization=None, robot=None, look=None,
            workers: int = 1, policy_kwargs: dict | None = None, like: str | Path | None = None,
            output_format: str = "lerobot") -> dict:
    """Roll `policy` out for `episodes` episodes of every problem in `inputs` (PDDL files or env
    packages) on `envs` envs per worker, with physics randomization drawn per episode as `generate`
    does when a `RandomizationSpec` is given, the scenes with the arm of `robot` (a RobotCard, as in
    `generate`), its cameras under `look` (a `policy.looks.EvalLook`; None: the scene's own);
    OUT/dataset, OUT/summary.json, OUT/SUMMARY.md, and with `output_format` "hdf5" OUT/dataset.hdf5
    too (robomimic's layout, `policy.hdf5`). Returns the summary.

    `policy`: a Policy object (one worker), or a spec string that each of `workers` processes loads
    (`load_policy(policy, **policy_kwargs)`, under `--like like`). The episodes run as a stage
    (`policy.stage`): the bytes do not depend on `workers`, a killed run resumes, a finished one
    rerun with the same inputs is returned as it is. `progress` takes a `ProgressEvent` per episode."""
    check_output_format(output_format, Path(out))
    if episodes < 1 or envs < 1 or not (isinstance(workers, int) and workers >= 1):
        raise PolicyError(f"episodes {episodes}, envs {envs} and workers {workers} must be >= 1")
    out = Path(out)
    load = PolicyLoad(policy, dict(policy_kwargs or {}), None if like is None else str(like)) \
        if isinstance(policy, str) else None
    inputs = tuple(str(Path(p).resolve()) for p in inputs)  # however spelled: one run, one fingerprint
    plan = Plan(rollout_plan, {"inputs": inputs, "domain": domain, "randomization": randomization, "robot": robot,
                               "max_ticks": settings.max_ticks, "episodes": episodes,
                               "control_hz": settings.control_hz})
    built = rollout_plan(**plan.args)  # the inputs are read (and refused) before anything is written
    problems = built[1]
    stage = PolicyStage("rollout", plan, load, len(problems) * episodes, settings, envs, seed,
                        policy if isinstance(policy, str) else spec, "Roll-out", look, randomization, built=built)
    if (done := finished_run(out, stage)) is not None:
        return _hdf5_too(out, done, output_format)
    stage.live = policy if load is None else load.load()  # loaded here first: a bad policy is named before any work
    guard_output_dir(out, [*inputs, *([] if like is None else [like])], error=PolicyError,
                     resumable=lambda o: resumable_run(o, stage))
    check_goals(problems)  # a goal true at the start or unreachable makes every episode meaningless
    return _hdf5_too(out, run_policy_stage(stage, out, [p.name for p in problems], summary_header(stage),
                                           workers=workers, progress=progress), output_format)


def _hdf5_too(out: Path, summary: dict, output_format: str) -> dict:
    """With output_format "hdf5", OUT/dataset.hdf5 written from OUT/dataset (unless a finished run wrote it)."""
    if output_format == "hdf5" and not (out / HDF5_NAME).exists():
        write_rollout_hdf5(out / "dataset", out / HDF5_NAME)
    return summary
