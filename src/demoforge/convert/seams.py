"""Where bake meets the simulator it does not import.

Two bake options read a raw episode's rebuilt MuJoCo model: `--filter-idle` (which sim.state
columns are the free objects' poses) and `--environment-state` (object poses and the TCP by
forward kinematics). convert loads neither MuJoCo nor a planner, so a real-robot log bakes
without them; a caller that asks for those options passes the model reader in:

    from demoforge.replay import EPISODE_MODELS
    bake(["raw/"], "train/", BakeConfig(filter_idle=True), models=EPISODE_MODELS)
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

from demoforge.raw.envstate import ObjectLayout
from demoforge.raw.episode import EpisodeRecord


class EpisodeModels(Protocol):
    """What bake reads off a raw episode's model, rebuilt from its scene inputs and draws
    (`demoforge.replay.EPISODE_MODELS`). Errors are `DemoforgeError`s; bake names the option."""

    def object_qpos_columns(self, root: Path, episode: int) -> list[int]:
        """Columns of episode `episode`'s sim.state rows holding its free objects' qpos
        (position [m], wxyz quaternion), 7 per object, objects by name."""
        ...

    def environment_state(self, root: Path, record: EpisodeRecord, sim_state: np.ndarray,
                          kind: str) -> tuple[np.ndarray, ObjectLayout]:
        """((n, width) environment state of `kind` (`demoforge.raw.envstate.KINDS`), its layout) of the
        recorded rows `sim_state` (n, n_state) of the episode of `root` with `record`."""
        ...
