"""Exact replay of raw episodes in the simulator: above `raw` (the format, which needs no
simulator) and `envs` (the scene builder), below every stage that replays (render, execute's
inline videos, policy, doctor, viz, pipeline).

    from demoforge.replay import episode_scene, replay_states
    for scene in replay_states(root, 3):     # each recorded tick restored into scene.data
        ...

Modules: `rebuild` (an episode's model rebuilt from its scene inputs and draws, its recorded
physics states restored tick by tick).
"""

from demoforge.replay.rebuild import (
    episode_scene,
    episode_states,
    record_scene,
    recorded_environment_state,
    replay_states,
)

__all__ = ["episode_scene", "episode_states", "record_scene", "recorded_environment_state", "replay_states"]
