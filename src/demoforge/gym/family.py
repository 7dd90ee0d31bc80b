"""A task family as a simulator env: each reset samples a problem of the family and a reset
state as `generate` does; each step executes one action of a baked convention.

    env = FamilyEnv(FamilyEnvConfig(task="pnp", split="test"))
    obs, info = env.reset(seed=0)      # obs: agent_pos, environment_state (, pixels)
    obs, reward, terminated, info = env.step(action)   # info["is_success"]: the PDDL goal (info["disturbed"]: held
                                                       # only with a block knocked over: ended, failed)

No Gymnasium here: the lerobot plugin (plugins/lerobot_env_demoforge) wraps this class in a
`gymnasium.Env` with spaces and a time limit; demoforge's own code drives it directly.

Episodes: the family's problems are `tasks gen TASK --problems problems --task-seed problem_seed
--split split`, with the arm of `robot`; a reset draws a problem p and an episode index e in
[0, episodes) from the env's Generator (seeded by `reset(seed=...)`) and starts
`start_episode(problem p, scene_seed, e)`, exactly the episode `demoforge generate --seed
scene_seed --robot robot` runs as episode e of problem p. So a dataset generated on those
problems replays in this env, and `--split test` gives problems (colours, placements) no
training episode had.

Observation: `agent_pos` (arm q [rad] + gripper closedness, as `observation.state`),
`environment_state` (`envstate`: the task's object poses, or with `environment_state="goal"`
only the regions its goal names), and, when cameras are asked,
`pixels` {camera: (H, W, 3) uint8}: the scene's own appearance, or under a named look
(`look`: "plain", "randomized" or a look YAML; one draw per episode, seeded by the episode),
at `image_size` when given (it replaces a look's sizes), else at the look's size of each camera,
else 224 x 224. Reward: the fraction of goal
atoms holding after the step; `terminated` when the goal holds.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np

from demoforge.errors import DemoforgeError
from demoforge.gym.convention import ActionConvention
from demoforge.raw.envstate import ObjectLayout, environment_state, layout_of

SPLITS = ("train", "test", "all")
DEFAULT_IMAGE_SIZE = (224, 224)  # (height, width) [px] of a camera image with neither a look nor an image_size


@dataclass(frozen=True)
class FamilyEnvConfig:
    """Which episodes a family env runs and how it is acted on."""

    task: str = "pnp"  # task family (demoforge.tasks.families.FAMILIES)
    split: str = "train"  # look split of the family's problems: train, test or all
    problems: int = 16  # problems of the family in the pool (tasks gen --problems)
    problem_seed: int = 0  # tasks gen --task-seed
    episodes: int = 1_000_000  # episode indices drawn per problem, [0, episodes)
    scene_seed: int = 0  # run seed of the episodes (generate --seed)
    action: ActionConvention = field(default_factory=ActionConvention)  # what an action means
    cameras: tuple[str, ...] = ()  # cameras rendered into `pixels` (none: state only)
    # (height, width) of every camera image [px], even numbers; replaces a look's sizes.
    # None: each camera at the look's size, else DEFAULT_IMAGE_SIZE
    image_size: tuple[int, int] | None = None
    look: str | None = None  # render under this look (name or YAML path); None = the scene's own appearance
    robot: str | None = None  # the arm: a built-in robot card name or a card YAML (generate --robot); None = panda
    environment_state: str = "objects"  # its kind (raw.envstate.KINDS): object poses, or the goal's regions only


def family_problems(cfg: FamilyEnvConfig) -> list:
    """The family's problems as execute Problems (parsed from generated text, no files)."""
    # lazy: scenes loads MuJoCo; the lerobot plugin imports gym for its config
    from demoforge.scenes.problem import Problem
    from demoforge.tasks import library, parse_task
    from demoforge.tasks.families import generate_family
    from demoforge.tasks.package import family as find_family, owner

    if cfg.split not in SPLITS:
        raise DemoforgeError(f"split {cfg.split!r} is not one of {list(SPLITS)}")
    if cfg.problems < 1 or cfg.episodes < 1:
        raise DemoforgeError(f"problems {cfg.problems} and episodes {cfg.episodes} must be >= 1")
    find_family(cfg.task)  # the error lists every family of every task package
    package = owner("families", cfg.task).name
    domain = library.domain_text(package)
    robot = None
    if cfg.robot is not None:
        from demoforge.sim import resolve_robot

        robot = resolve_robot(cfg.robot)
    out = []
    for g in generate_family(cfg.task, count=cfg.problems, seed=cfg.problem_seed, split=cfg.split):
        task = parse_task(g.problem_pddl, domain_text=domain, problem_file=f"{g.name}.pddl",
                          domain_file=f"library:{package}")
        out.append(Problem(g.name, task, g.scene, g.problem_pddl, f"family:{cfg.task}", robot=robot))
    return out


class FamilyEnv:
    """See the module docstring."""

    def __init__(self, cfg: FamilyEnvConfig):
        from demoforge.tasks import goal_atoms

        self.cfg = cfg
        self.problems = family_problems(cfg)
        self.goals = [goal_atoms(p.task) for p in self.problems]
        self._key = [zlib.crc32(cfg.task.encode()), SPLITS.index(cfg.split)]
        self.rng = np.random.default_rng(np.random.SeedSequence(self._key))
        self.ctx = None
        self.layout: ObjectLayout | None = None
        self.episode: tuple[str, int] | None = None  # (problem name, episode index) running
        self._rigs: dict[tuple[int, int], object] = {}  # (height, width) -> CameraRig of the running episode
        self._look = None
        self._view = None  # the render-only scene under the episode's look draw
        self._law = None
        self._scratch = None  # MjData for the TCP's forward kinematics, off the simulation's data
        self._shapes: dict[str, tuple[int, ...]] | None = None
        self._state_names: list[str] = []
        if cfg.image_size is not None:
            size = cfg.image_size
            if not (isinstance(size, tuple | list) and len(size) == 2
                    and all(isinstance(v, int) and v >= 2 and v % 2 == 0 for v in size)):
                raise DemoforgeError(f"FamilyEnvConfig.image_size {size!r} must be (height, width) in pixels, "
                                     "even numbers >= 2 (video), e.g. (96, 96)")
        if cfg.look is not None:
            from demoforge.render import load_look
            from demoforge.render.look import sized_look

            size = None if cfg.image_size is None else (cfg.image_size[1], cfg.image_size[0])
            self._look = sized_look(load_look(cfg.look), size)
        self._substeps = 1

    # -- shapes --------------------------------------------------------------------------
    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Observation and action shapes (builds the first problem's scene once)."""
        from demoforge.execute.problems import start_layout_scene

        if self._shapes is not None:
            return dict(self._shapes)
        scene, binding = start_layout_scene(self.problems[0])
        n_arm = len(scene.robot.arm_qpos)
        layout = layout_of(self.cfg.environment_state, scene, binding, self.goals[0])
        out = {"agent_pos": (n_arm + 1,), "environment_state": (layout.width,), "action": (n_arm + 1,)}
        self._state_names = layout.names
        for cam in self.cfg.cameras:
            if cam not in scene.cameras:
                raise DemoforgeError(f"camera {cam!r} is not in the scene; cameras: {sorted(scene.cameras)}")
            out[f"pixels/{cam}"] = (*self.camera_size(cam), 3)
        self._shapes = out
        return dict(out)

    def camera_size(self, camera: str) -> tuple[int, int]:
        """(height, width) [px] of `camera`'s images (see the module docstring)."""
        if self._look is not None:
            width, height = self._look.image_size(camera)
            return height, width
        return tuple(self.cfg.image_size or DEFAULT_IMAGE_SIZE)

    def names(self) -> dict[str, list[str]]:
        self.shapes()
        return {"environment_state": list(self._state_names)}

    # -- episodes ------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> tuple[dict, dict]:
        from demoforge.execute.problems import start_episode
        from demoforge.execute.vecenv import PddlEpisode

        if seed is not None:
            self.rng = np.random.default_rng(np.random.SeedSequence([int(seed), *self._key]))
        p = int(self.rng.integers(len(self.problems)))
        e = int(self.rng.integers(self.cfg.episodes))
        self.start(PddlEpisode(start_episode(self.problems[p], self.cfg.scene_seed, e)), p)
        return self.observe(), self.info()

    def start(self, ctx, p: int) -> None:
        """Run episode context `ctx` (an execute PddlEpisode) of problem index `p` from now on."""
        self.close_rig()
        self.ctx, self.p = ctx, p
        scene = ctx.scene
        self._view = None
        self._scratch = None
        self.episode = (self.problems[p].name, int(ctx.start.episode))
        ctx.atoms()  # the start state, which the goal's judge compares the end with (PddlEpisode.verdict)
        self.layout = layout_of(self.cfg.environment_state, scene, ctx.binding, self.goals[p])
        self._law = self.cfg.action.joint_law(scene.robot.card.controller)
        self._substeps = round(1.0 / (self.cfg.action.native_freq * scene.model.opt.timestep))
        if abs(self._substeps * scene.model.opt.timestep * self.cfg.action.native_freq - 1.0) > 1e-6:
            raise DemoforgeError(f"native rate {self.cfg.action.native_freq} Hz is not a whole number of physics "
                                 f"steps of {scene.model.opt.timestep} s")

    def step(self, action: np.ndarray) -> tuple[dict, float, bool, dict]:
        """One action: `stride` native control ticks. Returns obs, reward, terminated, info."""
        from demoforge.sim import control_step

        if self.ctx is None:
            raise DemoforgeError("step before reset")
        scene = self.ctx.scene
        action = np.asarray(action, dtype=np.float64)
        if action.shape != (len(scene.robot.arm_qpos) + 1,) or not np.isfinite(action).all():
            raise DemoforgeError(f"action {action.tolist()} must be {len(scene.robot.arm_qpos) + 1} finite numbers "
                                 "(arm under the convention, gripper closedness)")
        arm, grip = self.cfg.action.targets(action, scene.data.qpos[scene.robot.arm_qpos])
        for k in range(len(grip)):
            control_step(scene, self._law, arm[k], float(grip[k]), self._substeps)
        info = self.info()
        return self.observe(), info["partial_success"], info["is_success"] or info["disturbed"], info

    def info(self) -> dict:
        """is_success: the goal holds with nothing it keeps disturbed; disturbed: the goal holds only with
        a block knocked over onto another face the goal does not ask (`PddlEpisode.verdict`), which ends
        the episode failed; partial_success: the fraction of the goal's atoms that hold."""
        problem = self.problems[self.p]
        atoms = self.ctx.atoms()
        goal = self.goals[self.p]
        verdict = self.ctx.verdict(problem.task)
        partial = sum(a in atoms for a in goal) / len(goal) if goal else float(verdict == "success")
        return {"is_success": verdict == "success", "disturbed": verdict == "disturbed",
                "partial_success": float(partial), "problem": self.episode[0], "episode_index": self.episode[1]}

    def observe(self) -> dict:
        import mujoco

        from demoforge.sim import gripper_closedness, tcp_positions

        scene = self.ctx.scene
        q = scene.data.qpos
        if self._scratch is None:
            self._scratch = mujoco.MjData(scene.model)
        tcp = tcp_positions(scene.model, scene.robot, q, self._scratch)
        obs = {"agent_pos": np.append(q[scene.robot.arm_qpos], gripper_closedness(scene.robot, q)).astype(np.float32),
               "environment_state": environment_state(self.layout, q, tcp).astype(np.float32)}
        if self.cfg.cameras:
            obs["pixels"] = {cam: self.render(cam) for cam in self.cfg.cameras}
        return obs

    def render(self, camera: str | None = None) -> np.ndarray:
        """(H, W, 3) uint8 of `camera` (default: the first configured, else "side", the overview that
        shows the whole arm and every block: what an evaluation video should show)."""
        import mujoco

        from demoforge.sim import CameraRig

        scene = self.ctx.scene
        if self._look is not None and self._view is None:
            from demoforge.render import draw_look, look_scene, look_seed, look_targets

            seed = self.cfg.scene_seed ^ zlib.crc32(self.episode[0].encode())
            draw = draw_look(self._look, look_seed(seed, self._look.name, self.episode[1], 0), look_targets(scene))
            self._view = look_scene(scene, draw)
        view = self._view or scene
        if view is not scene:
            view.data.qpos[:] = scene.data.qpos
            mujoco.mj_kinematics(view.model, view.data)
        camera = camera or (self.cfg.cameras[0] if self.cfg.cameras else "side")
        size = self.camera_size(camera)
        if size not in self._rigs:
            self._rigs[size] = CameraRig(view.model, view.cameras, width=size[1], height=size[0])
        return self._rigs[size].rgb(view.data, camera)

    def task_description(self) -> str:
        from demoforge.execute.record import goal_words

        return goal_words(self.problems[self.p].task) if self.ctx is not None else ""

    def close_rig(self) -> None:
        for rig in self._rigs.values():
            rig.close()
        self._rigs = {}

    close = close_rig
