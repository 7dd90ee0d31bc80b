"""The viz commands' config records: `demoforge viz` (which episodes, `TileSettings`) and
`demoforge plot` (which episode), their fields the commands' options (`demoforge.fields`)."""

from __future__ import annotations

from dataclasses import dataclass

from demoforge.fields import MAX_EPISODE_INDEX, nested, option
from demoforge.render.config import episodes_value
from demoforge.viz.tiles import TileSettings
from demoforge.tasks.package import task_packages_option


@dataclass(frozen=True)
class VizConfig:
    """`demoforge viz`: the episodes tiled, and how (`TileSettings`' flags taken in as its own)."""

    task_packages: tuple[str, ...] = task_packages_option()  # first: the scenes rebuilt may be a package's
    episodes: tuple[int, ...] | None = option(None, "Episodes to tile, e.g. 0,2,5-7 [default: all].", kind="str",
                                              normalize=episodes_value, metavar="RANGES")
    tiles: TileSettings = nested(TileSettings)


@dataclass(frozen=True)
class PlotConfig:
    """`demoforge plot`: the episode plotted."""

    task_packages: tuple[str, ...] = task_packages_option()  # first: the scenes rebuilt may be a package's
    episode: int | None = option(None, "Episode index.", kind="int", optional=False, stage_required=True,
                                 range=(0, MAX_EPISODE_INDEX))
