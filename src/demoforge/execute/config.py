"""The execute stage's config: one record whose fields are the options of `demoforge generate`, of
a run's `execute:` stage and of `demoforge run` (`demoforge.fields`), the expert runner's limits
(`ExpertSettings`) taken in as its own; its methods give `execute.generate` the library values
(randomization spec, inline videos, materials, robot start windows) the options stand for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from demoforge.errors import DemoforgeError
from demoforge.execute.expert_episode import ExpertSettings
from demoforge.execute.shards import InlineVideo
from demoforge.fields import MAX_ENVS, MAX_EPISODES, nested, option, robot_option, seed_option, workers_option
from demoforge.randomize import RandomizationSpec, load_spec, spec_with_overrides
from demoforge.randomize.robot_start import RobotStartParams, params_from_dict, robot_start_option
from demoforge.randomize.spec import spec_from_dict, spec_to_dict
from demoforge.scenes.materials import material_arg_problems, materials_to_args, parse_material_args
from demoforge.sim import SceneSpec
from demoforge.sim.controllers import MODES
from demoforge.tasks.package import task_packages_option

PLAY_GOALS = 3  # goals per --play episode when --play-goals is not given


def _randomization_value(value: Any, where: str) -> dict | None:
    """`randomization` as stored: the spec's enabled fields (a path = a spec file), or None."""
    if value is False:
        return None
    spec = load_spec(value) if isinstance(value, str) else spec_from_dict(value, where=where)
    return spec_to_dict(spec)


def _materials_value(value: Any, where: str) -> tuple[str, ...]:
    """`material` as stored: canonical PROP=MATERIAL entries (sorted; custom materials as sorted JSON)."""
    return materials_to_args(parse_material_args(value, where=where))


@dataclass(frozen=True)
class ExecuteConfig:
    """The execute stage: plan, run skills, verify, retry, re-plan, record (`demoforge generate`)."""

    task_packages: tuple[str, ...] = task_packages_option()  # first: skills and predicates may come from one
    episodes_per_problem: int = option(4, "Episodes per problem.", range=(1, MAX_EPISODES), stage_required=True)
    envs: int = option(1, "Environments stepped together per worker slot.", range=(1, MAX_ENVS), run_default=2)
    problems_per_process: int = option(8, "Problems a work item holds at most, their episodes sharing its "
                                          "environments (fewer when the problems would not fill every worker); "
                                          "never changes a byte.", range=(1, 1024))
    settings: ExpertSettings = nested(ExpertSettings)  # --max-retries, --max-replans, --max-episode-s, --motion-profile
    control_law: str | None = option(None, "How the arm is commanded and what raw_command holds: joint_position "
                                           "(joint targets) or cartesian_delta (TCP deltas per tick through "
                                           "differential IK) [default: the robot card's law].", kind="str",
                                     choices=MODES)
    randomization: dict | None = option(None, "Physics randomization spec (a YAML file, see "
                                              "examples/randomize/physics.yaml; YAML config: a path or a mapping).",
                                        kind="mapping", normalize=_randomization_value, metavar="SPEC.yaml")
    randomize: tuple[str, ...] = option((), "FIELD=VALUE override of the randomization spec (YAML value), e.g. "
                                            "--randomize mass_scale=[0.9,1.1]; repeatable.", metavar="FIELD=VALUE",
                                   keyed=True)
    record_videos: tuple[str, ...] = option((), "Render these cameras while generating, comma-separated (e.g. "
                                                "front,wrist); frames come from the recorded states.")
    video_look: str = option("plain", "Look of --record-videos: a shipped look name or a YAML file.")
    play: bool = option(False, "Play data: after the problem's goal, chain goals sampled from the reached state (a "
                               "random walk over every operator of the domain) in one episode without resets.")
    play_goals: int | None = option(None, "Goals per --play episode, the problem's own first; each may take the "
                                          f"episode time limit [default: {PLAY_GOALS}].", kind="int", range=(1, 100))
    material: tuple[str, ...] = option((), "Contact material of a prop, PROP=MATERIAL: PROP is table, blocks "
                                           "(every block) or a block's name; MATERIAL a preset (steel, wood, "
                                           "plastic, rubber, foam) or a custom JSON object with solref, solimp, "
                                           "friction and density; over the sidecars' own; each new pair is "
                                           "contact-linted first (README 'Materials'); repeatable.",
                                       metavar="PROP=MATERIAL", normalize=_materials_value, keyed=True)
    seed: int = seed_option()
    workers: int | str = workers_option()
    robot: str | None = robot_option()
    robot_start: dict | None = robot_start_option()

    def materials(self) -> dict:
        """The --material choices as `execute.generate`'s `materials` (prop -> preset name or CustomMaterial)."""
        return parse_material_args(self.material)

    def randomization_spec(self) -> RandomizationSpec | None:
        """The physics randomization spec with the --randomize overrides (None: off)."""
        if self.randomization is None and not self.randomize:
            return None
        spec = spec_from_dict(self.randomization) if self.randomization is not None else RandomizationSpec()
        return spec_with_overrides(spec, self.randomize, where="--randomize") if self.randomize else spec

    def inline_video(self) -> InlineVideo | None:
        return InlineVideo(cameras=self.record_videos, look=self.video_look, seed=self.seed) if self.record_videos \
            else None

    def robot_start_params(self) -> RobotStartParams | None:
        return None if self.robot_start is None else params_from_dict(self.robot_start)

    def goals(self) -> int:
        return PLAY_GOALS if self.play_goals is None else self.play_goals

    def refusals(self) -> list[str]:
        """What generate would refuse that no one field shows."""
        problems = []
        try:
            self.randomization_spec()
        except DemoforgeError as exc:
            problems.append(" ".join(str(exc).split("\n")))
        if self.play_goals is not None and not self.play:
            problems.append(f"play_goals (--play-goals): {self.play_goals}: goals are chained only with --play; "
                            "add --play (YAML: play: true)")
        if len(set(self.record_videos)) != len(self.record_videos):
            problems.append(f"record_videos (--record-videos): {list(self.record_videos)} must be distinct cameras")
        if self.material:
            problems += [f"material (--material): {p}" for p in
                         material_arg_problems(self.materials(), timestep=SceneSpec().timestep, where="")]
        return problems
