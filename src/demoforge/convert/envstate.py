"""`bake --environment-state`: `observation.environment_state` from each recorded physics state.

The definition (objects, order, pose and TCP offset per object) is `demoforge.raw.envstate`'s, the one the
simulator env observes, so a policy trained on the baked column reads the env's. A raw
episode's model is rebuilt from its scene inputs and draw (like `--filter-idle`), which
needs the simulator: the caller passes it in (`convert.seams.EpisodeModels`); a real-robot log
has no physics state and cannot be given one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from demoforge.convert.episode import BakeError, Episode, no_models
from demoforge.convert.seams import EpisodeModels
from demoforge.dataset.keys import ENVIRONMENT_STATE as ENV_STATE
from demoforge.errors import DemoforgeError
from demoforge.raw import EpisodeRecord
from demoforge.raw.envstate import ObjectLayout


def episode_environment_state(ep: Episode, rows: np.ndarray, kind: str,
                              models: EpisodeModels | None) -> tuple[np.ndarray, ObjectLayout]:
    """((len(rows), width) float32 environment state of `kind` (`demoforge.raw.envstate.KINDS`) at
    the native ticks `rows`, its `ObjectLayout`: the episode's object names and the feature names), from its model
    rebuilt by `models` from meta/demoforge/scenes and its draws."""
    root = Path(ep.source)
    if ep.extra.get("problem") is None or ep.extra.get("scene_draw") is None:
        raise BakeError(f"{root}: --environment-state needs each episode's demoforge/problem and scene_draw records "
                        "(a raw demoforge dataset); this source has none")
    if ep.sim_state is None:
        raise BakeError(f"{ep.source}: episode {ep.index}: no sim.state column; --environment-state reads object "
                        "poses from the recorded physics state (a raw demoforge dataset)")
    if models is None:
        raise no_models("--environment-state", f"{root}: episode {ep.index}")
    record = EpisodeRecord.from_extras(ep.extra, where=str(root))
    try:
        state, layout = models.environment_state(root, record, ep.sim_state[rows], kind)
    except DemoforgeError as exc:
        raise BakeError(f"{root}: episode {ep.index}: {exc}") from None
    return state.astype(np.float32), layout
