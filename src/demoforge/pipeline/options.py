"""One options record per stage: what `demoforge run` (YAML and flags) and the stage's own command
are told, under one name each (see `demoforge.pipeline.fields`).

    TasksOptions    tasks gen   / run's tasks stage      family, problems, scene ranges, split, ...
    EnvsOptions     env build   / run's envs stage       reset states, profiles
    ExecuteOptions  generate    / run's execute stage    episodes, retries, randomization, play, ...
    RenderOptions   render      / run's render stage     looks, cameras, depth, segmentation
    BakeOptions     bake        / run's bake stage       control space, rate, cameras, encoder, ...
    DoctorOptions   doctor      / run's doctor stage     fail_on, checks, bins, ...

Fields marked `shared` (seed, workers, robot, robot_start) are set once for a run (the run
config's top level) and given to every stage that takes them. Each record's `check()` lists
what the stage itself would refuse (a family's block count, a look file, a control space), so
`demoforge run` refuses a bad config before its first stage. Inputs and outputs (files,
folders, --domain) are the commands' arguments, not options.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from demoforge.convert.config import BakeConfig
from demoforge.doctor.config import DoctorConfig
from demoforge.errors import DemoforgeError
from demoforge.render.config import RenderConfig
from demoforge.fields import MAX_ENVS, MAX_EPISODES, MAX_PROBLEMS, MAX_SEED, option
from demoforge.pipeline.option_values import (
    family_value, materials_value, mode_choices, motion_profile_choices, randomization_value,
)
from demoforge.fields import robot_option, seed_option, workers_option
from demoforge.pipeline.shared_options import robot_start_option, task_packages_option



@dataclass(frozen=True)
class TasksOptions:
    """The tasks stage: a task family's problems and their scene sidecars (`demoforge tasks gen`)."""

    task_packages: tuple[str, ...] = task_packages_option()  # first: the families below may come from one
    family: str = option("stack_three", "Task family of any loaded task package (`demoforge tasks list`).",
                         normalize=family_value)
    problems: int = option(2, "Problems generated.", range=(1, MAX_PROBLEMS),
                           stage_required=True)
    task_seed: int = option(0, "Seed of the task generator; same seed and options give byte-identical files.",
                            range=(0, MAX_SEED), stage_required=True)
    n: int | None = option(None, "Task blocks (tower height for stack_n/unstack) [default: the family's].",
                           kind="int", range=(1, 100))
    distractors: int = option(0, "Extra blocks on the table, not in the goal.", range=(0, 20))
    split: str = option("all", "Look split: all, train or test (disjoint looks for held-out tests).",
                        choices=("all", "train", "test"))
    split_by: str = option("colour", "Look the split keeps disjoint: colour or glyph.", choices=("colour", "glyph"))
    block_size: tuple[float, float] | None = option(None, "Cube edge range LO,HI [m] [default: 0.03,0.05].",
                                                     kind="pair", metavar="LO,HI")
    table_height_offset: tuple[float, float] | None = option(
        None, "Table top height offset range LO,HI [m] [default: -0.02,0.02].", kind="pair", metavar="LO,HI")
    friction: tuple[float, float] | None = option(None, "Sliding friction range LO,HI [default: 0.6,1.2].",
                                                   kind="pair", metavar="LO,HI")
    placement_x: tuple | None = option(None, "Start windows along x 'LO,HI[;LO,HI...]' [m].", kind="windows",
                                       metavar="LO,HI[;..]")
    placement_y: tuple | None = option(None, "Start windows along y 'LO,HI[;LO,HI...]' [m].", kind="windows",
                                       metavar="LO,HI[;..]")
    problem_files: tuple[str, ...] = option((), "PDDL problem files (with NAME.scene.json beside each) used instead "
                                                "of generating; repeatable.", flag="--problem-file", stage=False)
    sidecar_material: tuple[str, ...] = option((), "Contact material written into every sidecar, PROP=MATERIAL: "
                                                   "PROP is table or blocks (every block); MATERIAL a preset (steel, "
                                                   "wood, plastic, rubber, foam) or a custom JSON object (README "
                                                   "'Materials'); repeatable.",
                                               metavar="PROP=MATERIAL", normalize=materials_value)

    def family_options(self) -> dict[str, Any]:
        """`generate_family`'s options."""
        from demoforge.envs.materials import parse_material_args

        return {"n": self.n, "distractors": self.distractors, "split": self.split, "split_by": self.split_by,
                "block_size_m": self.block_size, "table_height_offset_m": self.table_height_offset,
                "friction": self.friction, "placement_x_m": self.placement_x, "placement_y_m": self.placement_y,
                "materials": tuple(sorted(parse_material_args(self.sidecar_material).items()))}

    def refusals(self) -> list[str]:
        from pathlib import Path

        from demoforge.tasks import generate_family

        problems = [f"problem_files (--problem-file): {f!r} is not a file" for f in self.problem_files
                    if not Path(f).is_file()]
        if self.sidecar_material:  # presets and simulability now; which props exist, per problem
            from demoforge.envs.materials import material_arg_problems, parse_material_args
            from demoforge.sim import SceneSpec

            problems += material_arg_problems(parse_material_args(self.sidecar_material),
                                              timestep=SceneSpec().timestep, where="--material")
        try:
            generate_family(self.family, count=0, seed=0, **self.family_options())
        except DemoforgeError as exc:
            problems.append(" ".join(str(exc).split("\n")))
        return problems


@dataclass(frozen=True)
class EnvsOptions:
    """The envs stage: scene profiles and reset states of each problem (`demoforge env build`)."""

    task_packages: tuple[str, ...] = task_packages_option()  # first: reset sampling evaluates their predicates
    reset_states: int = option(4, "Reset states sampled per scene profile.", range=(1, 100_000), stage_required=True)
    profiles: int = option(8, "Scene profiles baked per problem.", range=(1, 10_000))
    seed: int = seed_option()
    robot: str | None = robot_option()
    robot_start: dict | None = robot_start_option()

    def refusals(self) -> list[str]:
        return []


@dataclass(frozen=True)
class ExecuteOptions:
    """The execute stage: plan, run skills, verify, retry, re-plan, record (`demoforge generate`)."""

    task_packages: tuple[str, ...] = task_packages_option()  # first: skills and predicates may come from one
    episodes_per_problem: int = option(4, "Episodes per problem.", range=(1, MAX_EPISODES), stage_required=True)
    envs: int = option(1, "Environments stepped together per worker slot.", range=(1, MAX_ENVS), run_default=2)
    problems_per_process: int = option(8, "Problems a work item holds at most, their episodes sharing its "
                                          "environments (fewer when the problems would not fill every worker); "
                                          "never changes a byte.", range=(1, 1024))
    max_retries: int = option(3, "Attempts of a failed step beyond the first.", range=(0, 100))
    max_replans: int = option(2, "Re-plans per episode.", range=(0, 100))
    max_episode_s: float = option(180.0, "An episode still running after this is a timeout failure [s].",
                                  range=(0.0, 3600.0), low_open=True)
    motion_profile: str = option("medium", "Expert arm speed: slow, medium or fast (fractions of the robot card's "
                                           "joint velocity, acceleration and jerk limits).",
                                  choices=motion_profile_choices)
    control_law: str | None = option(None, "How the arm is commanded and what raw_command holds: joint_position "
                                           "(joint targets) or cartesian_delta (TCP deltas per tick through "
                                           "differential IK) [default: the robot card's law].", kind="str",
                                     choices=mode_choices)
    randomization: dict | None = option(None, "Physics randomization spec (a YAML file, see "
                                              "examples/randomize/physics.yaml; YAML config: a path or a mapping).",
                                        kind="mapping", normalize=randomization_value, metavar="SPEC.yaml")
    randomize: tuple[str, ...] = option((), "FIELD=VALUE override of the randomization spec (YAML value), e.g. "
                                            "--randomize mass_scale=[0.9,1.1]; repeatable.", metavar="FIELD=VALUE")
    record_videos: tuple[str, ...] = option((), "Render these cameras while generating, comma-separated (e.g. "
                                                "front,wrist); frames come from the recorded states.")
    video_look: str = option("plain", "Look of --record-videos: a shipped look name or a YAML file.")
    play: bool = option(False, "Play data: after the problem's goal, chain goals sampled from the reached state (a "
                               "random walk over every operator of the domain) in one episode without resets.")
    play_goals: int | None = option(None, "Goals per --play episode, the problem's own first; each may take the "
                                          "episode time limit [default: 3].", kind="int", range=(1, 100))
    material: tuple[str, ...] = option((), "Contact material of a prop, PROP=MATERIAL: PROP is table, blocks "
                                           "(every block) or a block's name; MATERIAL a preset (steel, wood, "
                                           "plastic, rubber, foam) or a custom JSON object with solref, solimp, "
                                           "friction and density; over the sidecars' own; each new pair is "
                                           "contact-linted first (README 'Materials'); repeatable.",
                                       metavar="PROP=MATERIAL", normalize=materials_value)
    seed: int = seed_option()
    workers: int | str = workers_option()
    robot: str | None = robot_option()
    robot_start: dict | None = robot_start_option()

    def materials(self) -> dict:
        """The --material choices as `execute.generate`'s `materials` (prop -> preset name or CustomMaterial)."""
        from demoforge.envs.materials import parse_material_args

        return parse_material_args(self.material)

    def runner_settings(self):
        from demoforge.execute import RunnerSettings

        return RunnerSettings(max_retries=self.max_retries, max_replans=self.max_replans,
                              max_episode_s=self.max_episode_s, motion_profile=self.motion_profile)

    def randomization_spec(self):
        """The physics randomization spec with the --randomize overrides (None: off)."""
        if self.randomization is None and not self.randomize:
            return None
        from demoforge.randomize import RandomizationSpec, spec_with_overrides
        from demoforge.randomize.spec import spec_from_dict

        spec = spec_from_dict(self.randomization) if self.randomization is not None else RandomizationSpec()
        return spec_with_overrides(spec, self.randomize, where="--randomize") if self.randomize else spec

    def inline_video(self):
        from demoforge.execute.shards import InlineVideo

        return InlineVideo(cameras=self.record_videos, look=self.video_look, seed=self.seed) if self.record_videos \
            else None

    def robot_start_params(self):
        from demoforge.randomize.robot_start import params_from_dict

        return None if self.robot_start is None else params_from_dict(self.robot_start)

    def goals(self) -> int:
        return 3 if self.play_goals is None else self.play_goals

    def refusals(self) -> list[str]:
        problems = []
        for what, make in (("runner settings", self.runner_settings), ("randomize", self.randomization_spec)):
            try:
                make()
            except DemoforgeError as exc:
                problems.append(" ".join(str(exc).split("\n")))
        if self.play_goals is not None and not self.play:
            problems.append(f"play_goals (--play-goals): {self.play_goals}: goals are chained only with --play; "
                            "add --play (YAML: play: true)")
        if len(set(self.record_videos)) != len(self.record_videos):
            problems.append(f"record_videos (--record-videos): {list(self.record_videos)} must be distinct cameras")
        if self.material:
            from demoforge.envs.materials import material_arg_problems
            from demoforge.sim import SceneSpec

            problems += [f"material (--material): {p}" for p in
                         material_arg_problems(self.materials(), timestep=SceneSpec().timestep, where="")]
        return problems


# Stage name -> its options record (the stages without options, merge and annotate, are absent).
STAGE_OPTIONS: dict[str, type] = {"tasks": TasksOptions, "envs": EnvsOptions, "execute": ExecuteOptions,
                                  "render": RenderConfig, "bake": BakeConfig, "doctor": DoctorConfig}
