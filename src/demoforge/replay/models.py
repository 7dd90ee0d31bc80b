"""What bake reads off a raw episode's rebuilt model, through the simulator.

bake imports no simulator (`demoforge.convert.seams`); its callers that ask for `--filter-idle` or
`--environment-state` pass `EPISODE_MODELS`:

    bake(["raw/"], "train/", BakeConfig(environment_state=True), models=EPISODE_MODELS)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from demoforge.raw.envstate import ObjectLayout
from demoforge.raw.episode import EpisodeRecord
from demoforge.replay.rebuild import episode_scene, recorded_environment_state


@dataclass(frozen=True)
class ReplayedModels:
    """`convert.seams.EpisodeModels` by rebuilding each episode's model (`replay.rebuild`); no
    state, so it pickles to bake's workers."""

    def object_qpos_columns(self, root: Path, episode: int) -> list[int]:
        """Columns of episode `episode`'s sim.state rows holding its free objects' qpos, objects by
        name: an integration snapshot starts with time, then qpos (mjSTATE_INTEGRATION order)."""
        scene = episode_scene(root, episode)
        return [1 + adr + k for _, adr in sorted(scene.prop_qpos.items()) for k in range(7)]

    def environment_state(self, root: Path, record: EpisodeRecord, sim_state: np.ndarray,
                          kind: str) -> tuple[np.ndarray, ObjectLayout]:
        """The environment state of `kind` of the recorded rows `sim_state` (`recorded_environment_state`)."""
        return recorded_environment_state(root, record, sim_state, kind=kind)


EPISODE_MODELS = ReplayedModels()
