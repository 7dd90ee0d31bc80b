"""Domain randomization: a spec of what varies, seeded diffable draws, and applying them.

Physics (this package's spec, sample and apply modules): `RandomizationSpec` -> `sample` ->
a plain JSON draw -> `apply_to_model` (mass, damping, frictionloss, gravity; recompiles) and
`apply_to_env` (gains, start pose, cameras; no recompile). The per-episode scene draw lives in
`demoforge.randomize.scene`.
"""

from demoforge.randomize.apply import (
    CameraBase,
    EnvHandle,
    RandomizableEnv,
    apply_to_env,
    apply_to_model,
    apply_to_scene_params,
    env_handle,
    snapshot_cameras,
)
from demoforge.randomize.sample import (
    MODEL_KEYS,
    RUNTIME_KEYS,
    SCHEMA,
    DrawTargets,
    draw_problems,
    draw_targets,
    dumps_draw,
    field_rng,
    loads_draw,
    sample,
    split_draw,
)
from demoforge.randomize.spec import (
    RandomizationError,
    RandomizationSpec,
    load_spec,
    spec_from_dict,
    spec_problems,
    spec_to_dict,
    spec_with_overrides,
)

__all__ = [
    "MODEL_KEYS", "RUNTIME_KEYS", "SCHEMA", "CameraBase", "DrawTargets", "EnvHandle", "RandomizableEnv",
    "RandomizationError", "RandomizationSpec", "apply_to_env", "apply_to_model", "apply_to_scene_params",
    "draw_problems", "draw_targets", "dumps_draw", "env_handle", "field_rng", "load_spec", "loads_draw",
    "sample", "snapshot_cameras", "spec_from_dict", "spec_problems", "spec_to_dict", "spec_with_overrides",
    "split_draw",
]
