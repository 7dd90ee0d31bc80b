"""Bake: project canonical raw episodes to training conventions at a chosen control rate.

    from demoforge.convert import BakeConfig, bake
    bake(["raw/"], "train/", BakeConfig(control_space="joint_vel", control_freq=15))

`BakeConfig` (`config`) is the bake's one config record, its fields also the options of
`demoforge bake` and of a run's `bake:` stage. `read_episode` turns any LeRobot v3 episode into a
canonical `Episode`, and `readers` is the public seam through which other formats (robomimic HDF5, LeRobot v2.1, a user's) give Episodes
(`register_reader`, the `demoforge.readers` entry points); `project` is the
pure convention function; `dead_ticks`/`keep_mask` the idle filter; `write_v21` the
older layout; `EpisodeModels` what a caller passes for the options that read an episode's rebuilt
MuJoCo model (`seams`: convert imports no simulator). See each module's docstring.
"""

from demoforge.convert.bake import BAKE_PATH, bake, bake_stamp, verify
from demoforge.convert.conventions import (
    CONVENTIONS, DEFAULT_CONVENTION, Projection, output_ticks, project, stride_for, valid_rates,
)
from demoforge.convert.episode import READERS, BakeError, CameraRef, Episode, read_episode, read_law, source_kind
from demoforge.convert.filters import IdleFilter, dead_ticks, keep_mask, wanted_outcome
from demoforge.convert.modality import MODALITY_PATH, modality_json
from demoforge.convert.config import FORMATS, BakeConfig
from demoforge.convert.plan import BakePlan, make_plan
from demoforge.convert.readers import Reader, read_source, reader_for, register_reader
from demoforge.convert.seams import EpisodeModels
from demoforge.convert.v21 import write_v21

__all__ = [
    "BAKE_PATH", "CONVENTIONS", "DEFAULT_CONVENTION", "FORMATS", "MODALITY_PATH", "READERS", "BakeConfig",
    "BakeError", "BakePlan", "CameraRef", "Episode", "EpisodeModels", "IdleFilter", "Projection", "Reader", "bake",
    "bake_stamp", "dead_ticks", "keep_mask", "make_plan", "modality_json", "output_ticks", "project", "read_episode",
    "read_law", "read_source", "reader_for", "register_reader", "source_kind", "stride_for", "valid_rates",
    "verify", "wanted_outcome", "write_v21",
]
