"""The scenes stage's config: one record whose fields are the options of `demoforge scenes build`, of
a run's `scenes:` stage and of `demoforge run` (`demoforge.fields`)."""

from __future__ import annotations

from dataclasses import dataclass

from demoforge.fields import option, robot_option, seed_option
from demoforge.randomize.robot_start import RobotStartParams, params_from_dict, robot_start_option
from demoforge.tasks.package import task_packages_option


@dataclass(frozen=True)
class ScenesConfig:
    """The scenes stage: scene profiles and reset states of each problem (`demoforge scenes build`)."""

    task_packages: tuple[str, ...] = task_packages_option()  # first: reset sampling evaluates their predicates
    reset_states: int = option(4, "Reset states sampled per scene profile.", range=(1, 100_000), stage_required=True)
    profiles: int = option(8, "Scene profiles baked per problem.", range=(1, 10_000))
    seed: int = seed_option()
    robot: str | None = robot_option()
    robot_start: dict | None = robot_start_option()

    def robot_start_params(self) -> RobotStartParams | None:
        return None if self.robot_start is None else params_from_dict(self.robot_start)
