"""demoforge as a simulator env for policies: the environment-state definition shared with
bake, the executor of baked action conventions, and task-family envs (wrapped for lerobot
by plugins/lerobot_env_demoforge). Needs no torch, lerobot or gymnasium."""

from demoforge.gym.convention import ActionConvention, environment_state_kind, from_bake
from demoforge.raw.envstate import ObjectLayout, environment_state, object_layout, state_names
from demoforge.gym.family import FamilyEnv, FamilyEnvConfig

__all__ = ["ActionConvention", "FamilyEnv", "FamilyEnvConfig", "ObjectLayout", "environment_state",
           "environment_state_kind", "from_bake", "object_layout", "state_names"]
