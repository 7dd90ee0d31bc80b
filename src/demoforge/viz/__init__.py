"""Looking at recorded data: tiled per-episode videos (`tiles`) and signal plots (`plot`).

    from demoforge.viz import plot_episode, write_tiles
    write_tiles("out/run/success", "out/viz", episodes=[0, 1])   # one MP4 per episode
    plot_episode("out/run/success", 0, "out/ep0.png")
"""

from demoforge.viz.plot import plot_episode
from demoforge.viz.tiles import TileSettings, write_tiles

__all__ = ["TileSettings", "plot_episode", "write_tiles"]
