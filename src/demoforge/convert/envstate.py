"""`bake --environment-state`: `observation.environment_state` from each recorded physics state.

The definition (objects, order, pose per object) is `demoforge.raw.envstate`'s, the one the
simulator env observes, so a policy trained on the baked column reads the env's. A raw
episode's model is rebuilt from its scene inputs and draw (like `--filter-idle`), which
needs the simulator; a real-robot log has no physics state and cannot be given one.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from demoforge.convert.episode import BakeError, Episode
from demoforge.dataset.keys import ENVIRONMENT_STATE as ENV_STATE


def episode_objects(root: Path, extra: dict):
    """(ObjectLayout, nq) of a raw episode: its model rebuilt from meta/demoforge/scenes and its draws."""
    from demoforge.raw import EpisodeRecord
    from demoforge.raw.replay import recorded_objects

    if extra.get("problem") is None or extra.get("scene_draw") is None:
        raise BakeError(f"{root}: --environment-state needs each episode's demoforge/problem and scene_draw records "
                        "(a raw demoforge dataset); this source has none")
    return recorded_objects(root, EpisodeRecord.from_extras(extra, where=str(root)))


def episode_environment_state(ep: Episode, rows: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
    """((len(rows), 7 k) float32 object poses at the native ticks `rows`, the episode's object names)."""
    from demoforge.raw.envstate import environment_state

    if ep.sim_state is None:
        raise BakeError(f"{ep.source}: episode {ep.index}: no sim.state column; --environment-state reads object "
                        "poses from the recorded physics state (a raw demoforge dataset)")
    layout, nq = episode_objects(Path(ep.source), ep.extra)
    qpos = ep.sim_state[rows, 1:1 + nq]  # an integration snapshot: time, then qpos
    return environment_state(layout, qpos).astype(np.float32), layout.objects


def objects_record(objects: tuple[str, ...]) -> str:
    return json.dumps(list(objects))
