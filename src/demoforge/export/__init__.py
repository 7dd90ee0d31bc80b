"""Exports: a baked dataset written the way a trainer's own loader reads it.

    from demoforge.export import ExportConfig, export
    export("train/", "train-openpi/", ExportConfig(trainer="openpi"))
    export("train/", "train-gr00t/", ExportConfig(trainer="gr00t", action_horizon=16))

Both write the LeRobot v2.1 layout with `datasets` 3.x feature tags (what openpi's pinned
lerobot and GR00T's loader read) and the trainer's own files: openpi's norm_stats.json and
a training config module with the delta-action mask (`openpi`), GR00T's modality.json,
relative_stats.json and modality config module (`gr00t`). `source` says which action parts
are turned into deltas from the state, and why.

Depth and segmentation maps are carried but not fed to the model by the written configs, which
take the RGB cameras. Neither loader reads lerobot's 12-bit depth maps (each decodes every video
as 8-bit RGB), so each depth map keeps its key with its codes packed into RGB (R = code >> 4,
G = code & 15, B = 0; lossless like a segmentation map); `dataset.depth.unpack_rgb12` gives
metres back, and the feature's info block and meta/demoforge/export.json say how.
"""

from demoforge.export.run import EXPORT_PATH, TRAINERS, ExportConfig, export
from demoforge.export.source import BakedSource, ExportError, read_source

__all__ = ["EXPORT_PATH", "TRAINERS", "BakedSource", "ExportConfig", "ExportError", "export", "read_source"]
