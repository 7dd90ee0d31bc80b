"""The render stage: replay recorded physics states under visual looks and write camera videos.

    from demoforge.render import RenderConfig, render_dataset
    config = RenderConfig(looks=("plain", "randomized:3"), cameras=("front", "wrist"))
    render_dataset("runs/x/success", "runs/x/rendered", config, workers=2)

Modules: `config` (RenderConfig: the render stage's one config record, its fields also the
options of `demoforge render` and of a run's `render:` stage), `look` (the YAML record),
`look_file` (reading one), `sample` (seeded per-copy draws, JSON), `apply` (a render-only model under a draw), `canvas` (one GL
context re-bound per model), `recorder` (CameraRecorder: a scene's cameras under a draw, also for
inline recording), `writer_thread`, `stage`.
"""

from demoforge.render.apply import look_scene, look_targets
from demoforge.render.canvas import Canvas
from demoforge.render.config import LookRequest, RenderConfig, parse_look_arg, resolve_looks
from demoforge.render.look import (
    BlocksLook,
    CameraLook,
    LightsLook,
    Look,
    LookError,
    SurfaceLook,
)
from demoforge.render.look_file import load_look, look_from_dict, shipped_looks
from demoforge.render.recorder import LOOK_EXTRA, CameraRecorder, camera_key, segmentation_colour
from demoforge.render.sample import LookTargets, draw_look, dumps_look_draw, loads_look_draw, look_seed
from demoforge.render.stage import (
    RENDER_META,
    SOURCE_EXTRA,
    RenderSummary,
    render_dataset,
)

__all__ = [
    "LOOK_EXTRA", "RENDER_META", "SOURCE_EXTRA", "BlocksLook", "CameraLook", "CameraRecorder", "Canvas",
    "LightsLook", "Look", "LookError", "LookRequest", "LookTargets", "RenderConfig", "RenderSummary",
    "SurfaceLook", "camera_key", "draw_look", "dumps_look_draw", "load_look", "loads_look_draw", "look_from_dict",
    "look_scene", "look_seed", "look_targets", "parse_look_arg", "render_dataset", "resolve_looks",
    "segmentation_colour",
    "shipped_looks",
]
