"""Exact replay of raw episodes in the simulator: above `raw` (the format, which needs no
simulator) and `scenes` (the scene builder), below every stage that replays (render, execute's
inline videos, policy, doctor, viz, pipeline).

    from demoforge.replay import episode_scene, replay_states
    for scene in replay_states(root, 3):     # each recorded tick restored into scene.data
        ...

Modules: `inputs` (a problem's scene inputs as execute records them, and the problem rebuilt
from them), `rebuild` (an episode's model rebuilt from its scene inputs and draws, its recorded
physics states restored tick by tick), `models` (`EPISODE_MODELS`: what bake, which imports no
simulator, is given to read rebuilt models with for `--filter-idle` and `--environment-state`).
"""

from demoforge.replay.inputs import recorded_problem, scene_inputs
from demoforge.replay.models import EPISODE_MODELS, ReplayedModels
from demoforge.replay.rebuild import (
    episode_scene,
    episode_states,
    record_scene,
    recorded_environment_state,
    replay_states,
)

__all__ = [
    "EPISODE_MODELS", "ReplayedModels", "episode_scene", "episode_states", "record_scene", "recorded_environment_state",
    "recorded_problem", "replay_states", "scene_inputs",
]
