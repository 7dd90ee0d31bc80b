"""demoforge's task families as a lerobot simulation env.

lerobot 0.6.1 imports this distribution (its name starts with `lerobot_env_`) in
`lerobot-train`, `lerobot-eval` and friends; importing it registers

- the env config `demoforge` (`--env.type=demoforge --env.task=pnp --env.split=test`),
- the policy type `demoforge_replay`: open-loop replay of a baked dataset's actions, the
  expert seen through the env (it checks the convention executor and the success wiring).
"""

from lerobot_env_demoforge.config import DemoforgeEnvConfig
from lerobot_env_demoforge.configuration_demoforge_replay import DemoforgeReplayConfig

__all__ = ["DemoforgeEnvConfig", "DemoforgeReplayConfig"]
