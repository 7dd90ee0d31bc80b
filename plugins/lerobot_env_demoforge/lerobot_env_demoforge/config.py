"""`--env.type=demoforge`: the EnvConfig lerobot parses, and the vector envs it creates."""

from __future__ import annotations

from dataclasses import dataclass, field

from lerobot.configs import FeatureType, PolicyFeature
from lerobot.envs.configs import EnvConfig
from lerobot.utils.constants import ACTION, OBS_ENV_STATE, OBS_IMAGES, OBS_STATE

MAX_SECONDS = 40.0  # default episode limit [s of simulated time]; stack_three demos run up to 28 s


@EnvConfig.register_subclass("demoforge")
@dataclass
class DemoforgeEnvConfig(EnvConfig):
    """A demoforge task family; every field maps onto demoforge.gym.FamilyEnvConfig."""

    task: str = "pnp"  # family: stack_three, unstack, pnp, flip, rotate (demoforge tasks families)
    # a demoforge task package to load first, for a family of its own (demoforge generate --task-package):
    # a .py file or a module defining PACKAGE; several comma-separated. Installed packages need none.
    task_package: str | None = None
    split: str = "test"  # problems of this look split: train, test or all
    fps: int = 15  # actions per second [Hz]; taken from --env.dataset's bake.json when given
    convention: str = "joint_target"  # action convention (joint_target, joint_pos, joint_vel); from bake.json when given
    dataset: str | None = None  # a baked dataset whose meta/bake.json fixes convention, rate and gains
    problems: int = 16  # problems of the family (demoforge tasks gen --problems)
    problem_seed: int = 0  # demoforge tasks gen --task-seed
    episodes: int = 1_000_000  # episode indices a reset draws from, per problem
    scene_seed: int = 0  # run seed of the episodes (demoforge generate --seed)
    episode_length: int | None = None  # steps before truncation; None = 40 s at fps
    cameras: str = ""  # comma-separated cameras rendered into `pixels` (front, side, wrist); "" = state only
    look: str | None = None  # render pixels under this look: plain, randomized or a look YAML
    # every camera's image size [px]: WIDTHxHEIGHT or one number (96), even; it replaces a look's sizes.
    # None: observation_width x observation_height when given, else the look's size, else 224 x 224
    image_size: str | None = None
    robot: str | None = None  # the arm: a built-in robot card (panda, ur5e_2f85) or a card YAML; None = panda
    # environment_state: objects (object poses) or goal (only the goal's regions: for pixel policies);
    # None = the kind --env.dataset's bake.json records, else objects
    environment_state: str | None = None
    observation_height: int | None = None  # lerobot's usual name for the image height [px]; give with the width
    observation_width: int | None = None  # [px]; both or neither; --env.image_size says the same in one flag
    features: dict[str, PolicyFeature] = field(default_factory=dict)
    features_map: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        from demoforge.gym import FamilyEnv
        from demoforge.tasks.package import load_package
        from demoforge.tasks.package_records import TaskPackageError

        for spec in (s.strip() for s in (self.task_package or "").split(",")):
            if spec:  # recorded in DEMOFORGE_TASK_PACKAGES, so the async envs' processes load it too
                try:
                    load_package(spec)
                except TaskPackageError as exc:
                    raise TaskPackageError(f"--env.task_package={self.task_package}: {exc}") from None
        core = FamilyEnv(self.family_config())
        self.fps = core.cfg.action.control_freq
        shapes = core.shapes()
        self.features = {
            ACTION: PolicyFeature(type=FeatureType.ACTION, shape=shapes["action"]),
            "agent_pos": PolicyFeature(type=FeatureType.STATE, shape=shapes["agent_pos"]),
            "environment_state": PolicyFeature(type=FeatureType.ENV, shape=shapes["environment_state"]),
        }
        self.features_map = {ACTION: ACTION, "agent_pos": OBS_STATE, "environment_state": OBS_ENV_STATE}
        for cam in self.camera_list:
            self.features[f"pixels/{cam}"] = PolicyFeature(type=FeatureType.VISUAL, shape=shapes[f"pixels/{cam}"])
            self.features_map[f"pixels/{cam}"] = f"{OBS_IMAGES}.{cam}"
        self.check_dataset_images()

    @property
    def camera_list(self) -> tuple[str, ...]:
        return tuple(c.strip() for c in self.cameras.split(",") if c.strip())

    @property
    def max_steps(self) -> int:
        return self.episode_length or round(MAX_SECONDS * self.fps)

    def family_config(self):
        from demoforge.gym import ActionConvention, FamilyEnvConfig, environment_state_kind, from_bake

        kind = self.environment_state
        if self.dataset:
            action = from_bake(self.dataset)
            baked = environment_state_kind(self.dataset)
            if kind is not None and baked is not None and kind != baked:
                raise ValueError(f"--env.environment_state={kind}, but {self.dataset} was baked with environment "
                                 f"state kind {baked!r}: a policy trained on it reads that; drop the flag or re-bake")
            kind = kind or baked
        else:
            action = ActionConvention(self.convention, int(self.fps), 60)
        return FamilyEnvConfig(task=self.task, split=self.split, problems=self.problems,
                               problem_seed=self.problem_seed, episodes=self.episodes, scene_seed=self.scene_seed,
                               action=action, cameras=self.camera_list, look=self.look, robot=self.robot,
                               image_size=self.image_hw(), environment_state=kind or "objects")

    def image_hw(self) -> tuple[int, int] | None:
        """(height, width) [px] asked for by --env.image_size or --env.observation_height/width; None: neither."""
        from demoforge.errors import DemoforgeError
        from demoforge.render.look import parse_image_size

        h, w = self.observation_height, self.observation_width
        if (h is None) != (w is None):
            raise DemoforgeError(f"--env.observation_height={h} --env.observation_width={w}: give both, or give "
                                 "--env.image_size=WIDTHxHEIGHT alone")
        legacy = None if h is None else (int(h), int(w))
        if self.image_size is None:
            return legacy
        try:
            width, height = parse_image_size(str(self.image_size))
        except DemoforgeError as exc:
            raise DemoforgeError(f"--env.image_size={self.image_size}: {exc}") from None
        if legacy is not None and legacy != (height, width):
            raise DemoforgeError(f"--env.image_size={self.image_size} ({width}x{height}) and --env.observation_width="
                                 f"{w} --env.observation_height={h} ({w}x{h}) disagree; give one of them")
        return height, width

    def check_policy_images(self, policy_features: dict, where: str, holder: str = "the policy") -> None:
        """Refuse image inputs (lerobot's channel-first (3, H, W)) of another size than the env renders;
        `where` names their source in the message, `holder` says whose they are."""
        from demoforge.errors import DemoforgeError

        problems, wanted = [], set()
        for env_key, policy_key in sorted(self.features_map.items()):
            env_ft, policy_ft = self.features.get(env_key), policy_features.get(policy_key)
            if env_ft is None or policy_ft is None or env_ft.type is not FeatureType.VISUAL:
                continue
            (eh, ew), (ph, pw) = tuple(env_ft.shape[:2]), tuple(policy_ft.shape[-2:])
            if (eh, ew) != (ph, pw):
                wanted.add(f"{pw}x{ph}")
                problems.append(f"{policy_key}: {holder} expects {pw}x{ph} px (shape {tuple(policy_ft.shape)}), "
                                f"the env renders {ew}x{eh} px (shape {tuple(env_ft.shape)})")
        if problems:
            size = next(iter(wanted)) if len(wanted) == 1 else "WIDTHxHEIGHT"
            raise DemoforgeError(f"{where} does not fit --env.type=demoforge:\n  " + "\n  ".join(problems)
                                 + f"\nFix: render at that size with --env.image_size={size}")

    def check_dataset_images(self) -> None:
        """Refuse cameras whose size differs from --env.dataset's videos of them: a policy trained on
        that dataset reads its size."""
        if not self.dataset:
            return
        from demoforge.dataset import open_dataset

        features = {key: ft for key, ft in open_dataset(self.dataset).info.features.items() if ft.dtype == "video"}
        shaped = {key: PolicyFeature(type=FeatureType.VISUAL, shape=(3, *ft.shape[:2])) for key, ft in features.items()}
        self.check_policy_images(shaped, f"--env.dataset={self.dataset}", "the dataset's video")

    @property
    def gym_kwargs(self) -> dict:
        return {"config": self.family_config(), "max_episode_steps": self.max_steps}

    def create_envs(self, n_envs: int, use_async_envs: bool = False):
        """{"demoforge": {0: VectorEnv}}: one suite, one task (the family). A policy given on the command
        line (`--policy.path`, as lerobot-eval takes it) is checked first: its image inputs must have
        the env's size (lerobot checks only that the camera keys overlap)."""
        from lerobot.configs import parser

        from lerobot_env_demoforge.env import make_vector_env

        path = parser.get_path_arg("policy")
        if path:
            from lerobot.configs.policies import PreTrainedConfig

            self.check_policy_images(PreTrainedConfig.from_pretrained(path).input_features, f"--policy.path={path}")

        return {self.type: {0: make_vector_env(self.family_config(), self.max_steps, n_envs, use_async_envs)}}
