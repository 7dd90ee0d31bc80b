"""The demoforge_replay policy: open-loop replay keyed by the first observation.

At the first `select_action` after `reset`, each batch row's observation (state and
environment state) is matched to the dataset episode whose first frame it equals (within
`tolerance`); that episode's actions are then played one per step, the last one held. An
env start that no episode has is an error naming the nearest distance: the replay is
meant for envs configured to draw the dataset's episodes (same problems, seeds and split).
"""

from __future__ import annotations

import numpy as np
import torch
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.utils.constants import ACTION, OBS_ENV_STATE, OBS_STATE

from lerobot_env_demoforge.configuration_demoforge_replay import DemoforgeReplayConfig


class DemoforgeReplayPolicy(PreTrainedPolicy):
    config_class = DemoforgeReplayConfig
    name = "demoforge_replay"

    def __init__(self, config: DemoforgeReplayConfig, **kwargs):
        super().__init__(config)
        from demoforge.dataset import open_dataset

        config.validate_features()
        reader = open_dataset(config.dataset)
        firsts, self.actions = [], []
        for k in reader.episode_indices:
            cols = reader.read_episode(k, [OBS_STATE, OBS_ENV_STATE, ACTION])
            firsts.append(np.concatenate([cols[OBS_STATE][0], cols[OBS_ENV_STATE][0]]))
            self.actions.append(np.asarray(cols[ACTION], np.float32))
        self.firsts = np.stack(firsts)
        self._playing: list[int] | None = None
        self._t = 0

    def get_optim_params(self) -> dict:
        return {}

    def reset(self):
        self._playing, self._t = None, 0

    def _match(self, batch: dict[str, torch.Tensor]) -> list[int]:
        obs = torch.cat([batch[OBS_STATE], batch[OBS_ENV_STATE]], dim=-1).cpu().numpy()
        out = []
        for row in obs:
            dist = np.abs(self.firsts - row).max(axis=1)
            k = int(np.argmin(dist))
            if dist[k] > self.config.tolerance:
                raise ValueError(f"demoforge_replay: no episode of {self.config.dataset} starts where this env does "
                                 f"(nearest differs by {dist[k]:.3g} > tolerance {self.config.tolerance}); "
                                 "configure the env to draw the dataset's problems and episodes")
            out.append(k)
        return out

    @torch.no_grad()
    def select_action(self, batch: dict[str, torch.Tensor], **kwargs) -> torch.Tensor:
        if self._playing is None:
            self._playing = self._match(batch)
        rows = [a[min(self._t, len(a) - 1)] for a in (self.actions[k] for k in self._playing)]
        self._t += 1
        return torch.from_numpy(np.stack(rows))

    def predict_action_chunk(self, batch: dict[str, torch.Tensor], **kwargs) -> torch.Tensor:
        return self.select_action(batch)[:, None]

    def forward(self, batch: dict[str, torch.Tensor]):
        raise NotImplementedError("demoforge_replay replays a dataset; it has nothing to train")
