"""`--policy.type=demoforge_replay --policy.dataset=BAKED`: replay a baked dataset through the env.

The module names follow lerobot's convention (configuration_X, modeling_X, processor_X) so
lerobot's factories find the policy and its processors for this plugin type.
"""

from __future__ import annotations

from dataclasses import dataclass

from lerobot.configs import PreTrainedConfig
from lerobot.optim.optimizers import AdamConfig


@PreTrainedConfig.register_subclass("demoforge_replay")
@dataclass
class DemoforgeReplayConfig(PreTrainedConfig):
    """Plays, for each env, the actions of the dataset episode that starts where the env starts."""

    dataset: str = ""  # a baked demoforge dataset with observation.environment_state
    tolerance: float = 1e-4  # largest difference of the first observation from the episode's first frame
    push_to_hub: bool = False

    @property
    def observation_delta_indices(self) -> None:
        return None

    @property
    def action_delta_indices(self) -> None:
        return None

    @property
    def reward_delta_indices(self) -> None:
        return None

    def get_optimizer_preset(self) -> AdamConfig:
        return AdamConfig(lr=0.0)  # nothing to train

    def get_scheduler_preset(self) -> None:
        return None

    def validate_features(self) -> None:
        if not self.dataset:
            raise ValueError("demoforge_replay needs --policy.dataset=PATH of a baked demoforge dataset")
