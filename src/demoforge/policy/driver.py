"""The roll-out driver: a policy drives a VecSimEnv and every episode is recorded as it ends.

`run_policy` runs one work item of a policy stage (`policy.stage.PolicyStage`): a queue of
(task, episode) pairs on `envs` slots. `PolicyDriver` holds what the item shares across ticks:
the spaces the env offers the policy, each slot's running `_Episode`, and the episodes finished
ahead of an earlier one (written in queue order, so the bytes do not depend on which slot
finished first). Each tick: observe (environment state, camera frames), act, record, step, end
the episodes that finished (goal reached, truncated), dropped an object or reached the goal only by
disturbing what it keeps (`tasks.disturbed`: a block knocked over onto another face).

Cameras: a policy that declares `observation.images.<camera>` observations of shape
(H, W, 3) gets that camera rendered inline each tick (RGB, the scene's own look or the
evaluation look, the state before the tick, like `observation.state`), and the frames are
recorded as that video feature of the dataset.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import mujoco
import numpy as np

from demoforge.dataset import DatasetWriter, Feature
from demoforge.dataset.keys import ENVIRONMENT_STATE as ENV_STATE
from demoforge.dataset.keys import IMAGES_PREFIX, camera_of, image_key
from demoforge.errors import DemoforgeError
from demoforge.execute.layout import RunLayout, write_raw_meta
from demoforge.execute.problems import start_layout_scene
from demoforge.execute.record import EpisodeRecorder, goal_words
from demoforge.execute.vecenv import SimTask, VecSimEnv
from demoforge.policy.blame import code_roots, user_error
from demoforge.policy.like import check_convention
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
from demoforge.policy.settings import RolloutSettings, apply_assist
from demoforge.raw import EpisodeRecord, FailureCause, FailureKind
from demoforge.raw.envstate import environment_state, object_layout
from demoforge.render import CameraRecorder
from demoforge.scenes.problem import Problem, problem_robot
from demoforge.sim import CameraRig, card_to_dict, snapshot, tcp_positions
from demoforge.stage.protocol import Progress, ProgressEvent
from demoforge.symbolic.predicates import fallen
from demoforge.tasks import disturbed, goal_atoms
from demoforge.tasks.pddl_text import format_atom

# (problem, ctx) -> extra records merged into the episode's (e.g. where eval started)
ExtraFn = Callable[[Problem, object], dict]


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


class PolicyDriver:
    """One work item: `queue` ((task, episode) pairs) run with `policy` on `envs` slots and recorded
    to OUT/dataset. The spaces are checked when it is made, before anything is written."""

    def __init__(self, policy: Policy, tasks: list[SimTask], problems: list[Problem], layout: RunLayout,
                 queue: list[tuple[int, int]], out: Path, *, envs: int, seed: int, settings: RolloutSettings,
                 spec: str, extra: ExtraFn | None, progress: Progress | None, randomization, look, stage: str):
        self.policy, self.tasks, self.problems, self.layout, self.queue, self.out = policy, tasks, problems, layout, queue, out
        self.envs, self.seed, self.settings, self.spec, self.extra = envs, seed, settings, spec, extra
        self.progress, self.randomization, self.look, self.stage = progress, randomization, look, stage
        self.env_sp, self.images, self.env_state = self._spaces()
        self.env: VecSimEnv | None = None
        self.writer: DatasetWriter | None = None
        self.order = {ident: k for k, ident in enumerate(queue)}
        self.pending: dict[int, tuple] = {}  # queue position -> a finished episode waiting for an earlier one
        self.written = 0  # episodes written, in queue order
        self.eps: list[_Episode | None] = [None] * envs
        self.objects: list = [None] * envs  # per slot: (environment-state layout, scratch MjData for the TCP)

    def _spaces(self) -> tuple[PolicySpaces, dict[str, tuple], bool]:
        """(the spaces the env offers, the image observations recorded, whether the environment state is
        observed); the policy's spaces, convention and image sizes checked against them."""
        policy, spec, problems, look = self.policy, self.spec, self.problems, self.look
        env_sp = env_spaces(len(self.layout.joint_names))
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
        check_convention(policy, self.settings.control_hz, spec)
        if len(set(images.values())) > 1:
            raise PolicyError(f"policy {spec!r}: image observations {images} must share one size")
        return env_sp, images, env_state

    def run(self) -> None:
        """Every episode of the queue, written as it ends; then the raw meta files."""
        made = _missing_top(self.out)  # removed again when the policy fails: nothing half-written
        self.out.mkdir(parents=True, exist_ok=True)
        root = self.out / "dataset"
        features = {**self.layout.features(), **{k: Feature("video", shape) for k, shape in self.images.items()}}
        self.env = VecSimEnv(self.tasks, self.envs, episodes=self.queue, seed=self.seed,
                             control_hz=self.settings.control_hz, randomization=self.randomization)
        try:
            # a clean exit finalizes the dataset; an exception (a kill, a bug) keeps its staging for a look
            with DatasetWriter.create(root, fps=self.layout.fps, features=features,
                                      robot_type=self.layout.robot_type) as self.writer:
                obs, _ = self.env.reset()
                for i in range(self.envs):
                    self._begin(i)
                while not self.env.exhausted:
                    obs = self._tick(obs)
        except BaseException as exc:
            for ep in self.eps:
                if ep is not None:
                    ep.close()
            if isinstance(exc, DemoforgeError):  # bad input (the policy's): keep nothing; a kill or a bug keeps staging
                shutil.rmtree(made or root, ignore_errors=True)
            raise
        look = self.look
        write_raw_meta(root, self.layout, self.problems, stage="rollout", run={
            "policy": self.spec, "seed": self.seed, "settings": asdict(self.settings),
            "robot": card_to_dict(problem_robot(self.problems[0])), "look": None if look is None else look.label})

    def _tick(self, obs: dict) -> dict:
        """One control tick of every active slot; returns the next observation."""
        env, spec, policy = self.env, self.spec, self.policy
        active = env.active
        obs = self._observe(obs)
        actions = check_actions(users_code(spec, "act()", policy, policy.act, obs), active, self.env_sp.action,
                                where=f"policy {spec!r}")
        # Step with exactly what is recorded (float32 columns), so every roll-out replays bit for bit.
        actions = actions.astype(np.float32).astype(np.float64)
        for i in np.flatnonzero(active):
            ep = self.eps[i]
            ep.rec.record(ep.ctx.atoms(), actions[i, :-1], actions[i, -1], -1, -1)
            apply_assist(ep.ctx.scene, self.settings.assist, ep.rec.length - 1)
        obs, _, _, _, info = env.step(actions)
        refresh = False
        for i in np.flatnonzero(active):
            ep = self.eps[i]
            if info["done"][i]:
                ok = bool(info["final_success"][i])
                self._end(ep, ok, "success" if ok else "disturbed" if info["final_spoiled"][i] else "truncated")
                self._begin(i)
            elif ep.dropped(self.settings.drop_margin):
                self._end(ep, False, "dropped")
                env.finish(i)
                self._begin(i)
                refresh = True
        return env.observe() if refresh else obs

    def _begin(self, i: int) -> None:
        """Slot `i`'s next episode (None when the queue is used up): its recorder, layout and the policy's reset."""
        env = self.env
        if env.ids[i] is None:
            self.eps[i] = None
            return
        t = env.ids[i][0]
        problem = self.problems[t]
        self.eps[i] = _Episode(env, i, self.layout, self.images, self.look, problem.name)
        ctx = env.contexts[i]
        if self.env_state:
            self.objects[i] = (object_layout(ctx.scene, ctx.binding, goal_atoms(problem.task)),
                               mujoco.MjData(ctx.scene.model))
        users_code(self.spec, "reset()", self.policy, self.policy.reset, i,
                   EpisodeStartInfo(problem, ctx.start.episode, ctx, env, self.layout))

    def _end(self, ep: _Episode, success: bool, how: str) -> None:
        """Score the finished episode `ep` and write it, with any finished after it that it held back."""
        settings = self.settings
        problem = self.problems[ep.ident[0]]
        goal = goal_atoms(problem.task)
        atoms = ep.ctx.atoms()
        ticks = ep.rec.length
        metrics = {"success": bool(success), "partial_success": partial_success(goal, atoms),
                   "completion_ratio": completion_ratio(goal, ep.start_atoms, atoms, success=success),
                   "alive_ratio": alive_ratio(ticks, success=success, cut=how in ("dropped", "disturbed"),
                                              warmup=settings.warmup, horizon=settings.horizon),
                   "end": how}
        metrics["full_completion"] = metrics["completion_ratio"] >= 1.0
        start = ep.ctx.start.records
        why = f"policy episode ended: {how}"
        if how == "disturbed":  # the goal held, but only with something it keeps knocked out of place
            why += " (the goal holds, but " + ", ".join(
                format_atom(a) for a in disturbed(problem.task, ep.start_atoms, atoms)) + " no longer holds)"
        failure = None if success else FailureCause(
            FailureKind.PHYSICS if how in ("dropped", "disturbed") else FailureKind.TIMEOUT, why)
        record = EpisodeRecord(
            problem.name, start["seed"], start["scene_draw"], start["env_package"], start["reset_state"],
            randomization=ep.draw, goal=tuple(format_atom(a) for a in goal),
            outcome="success" if success else "failure", failure=failure, sim_state_width=ep.rec.state_width,
            more={"assist": None if settings.assist is None else asdict(settings.assist), "policy": self.spec,
                  **metrics},
        ).to_extras()
        if self.extra is not None:
            record.update(self.extra(problem, ep.ctx))
        if ep.look_draw is not None:
            record["look"] = ep.look_draw  # the frames can be rendered again from the states
        self.pending[self.order[ep.ident]] = (ep.columns(), goal_words(problem.task), record, problem.name, metrics)
        while self.written in self.pending:
            cols, task, rec, name, m = self.pending.pop(self.written)
            self.writer.add_episode(cols, task=task, extra=rec)
            self.written += 1
            if self.progress is not None:
                self.progress(ProgressEvent(self.stage, "episode", name, self.written, len(self.queue),
                                            success=bool(m["success"]), failure=None if m["success"] else str(m["end"])))

    def _observe(self, obs: dict) -> dict:
        """The env's observation plus each slot's environment state and camera frames, as the policy declared."""
        if not self.images and not self.env_state:
            return obs
        out = dict(obs)
        if self.env_state:
            out[ENV_STATE] = np.full((self.envs, self.env_sp.observation[ENV_STATE][0]), np.nan)
            for i, ep in enumerate(self.eps):
                if ep is not None:
                    scene = ep.ctx.scene
                    layout, scratch = self.objects[i]
                    tcp = tcp_positions(scene.model, scene.robot, scene.data.qpos, scratch)
                    out[ENV_STATE][i] = environment_state(layout, scene.data.qpos, tcp)
        for key, shape in self.images.items():
            out[key] = np.zeros((self.envs, *shape), np.uint8)
        for i, ep in enumerate(self.eps):
            if ep is not None:
                for key, frame in ep.render().items():
                    out[key][i] = frame
        return out


def run_policy(policy: Policy, tasks: list[SimTask], problems: list[Problem], layout: RunLayout,
               queue: list[tuple[int, int]], out: Path, *, envs: int, seed: int, settings: RolloutSettings,
               spec: str, extra: ExtraFn | None = None, progress: Progress | None = None, randomization=None,
               look=None, stage: str = "rollout") -> None:
    """Run `queue` ((task, episode) pairs) with `policy` and record them to OUT/dataset (one
    work item of `policy.stage.PolicyStage`, which counts the summary from the merged episodes;
    `progress` takes a `stage` episode event per episode written, in queue order). `look`: a
    `policy.looks.EvalLook` the cameras render under (None: the scene's own)."""
    PolicyDriver(policy, tasks, problems, layout, queue, out, envs=envs, seed=seed, settings=settings, spec=spec,
                 extra=extra, progress=progress, randomization=randomization, look=look, stage=stage).run()
