"""Physics domain randomization of one environment at reset (issue #6 in VecSimEnv).

`randomize_scene(scene, spec, rng)` draws once from `spec` (`demoforge.randomize.sample`)
and applies the draw to a scene already in its reset state; `apply_draw(scene, draw)`
applies a recorded draw (replay). Model-level quantities (mass and inertia, joint damping
and frictionloss, gravity) rebuild the model from the scene's MjSpec and carry the reset
state over; runtime quantities (gains, camera jitter, start-pose offset) are set in place
relative to the nominal values, so nothing drifts across resets.

Cost (BENCHMARKS.md, bench_randomize, shared 2-core machine): a runtime-only draw costs
0.3-0.4 ms per reset; a model-level draw 1.6-2.8 ms (a recompile and a new MjData), about
12-15% of one simulated second of a three-cube scene, i.e. a few percent of a
several-second episode. Size env counts by episodes, not by resets.
"""

from __future__ import annotations

import mujoco
import numpy as np

from demoforge.randomize import (
    RandomizationSpec,
    apply_to_env,
    apply_to_model,
    draw_targets,
    env_handle,
    sample,
    split_draw,
)
from demoforge.scenes.scene import REGION_PREFIX
from demoforge.sim import Scene, restore, scene_from_model, scene_mjspec, snapshot


def _rebuild(scene: Scene, draw: dict) -> Scene:
    """`scene` recompiled with the draw's model-level part, in the same physics state."""
    state = snapshot(scene.model, scene.data)
    model = apply_to_model(draw, scene_mjspec(scene.spec), nominal=scene.model)
    new = scene_from_model(scene.spec, model)
    # The task scene builder turns region slabs into visual-only geoms after compiling;
    # a recompile from the spec must do the same or the slabs would collide.
    for prop in scene.spec.props:
        if prop.name.startswith(REGION_PREFIX):
            g = model.geom(prop.name).id
            model.geom_contype[g] = scene.model.geom_contype[g]
            model.geom_conaffinity[g] = scene.model.geom_conaffinity[g]
    restore(new.model, new.data, state)
    return new


def apply_draw(scene: Scene, draw: dict) -> Scene:
    """Apply a randomization draw to `scene` (in its reset state); returns the scene to use,
    a rebuilt one when the draw has model-level quantities."""
    model_part, _ = split_draw(draw)
    if model_part:
        scene = _rebuild(scene, draw)
    apply_to_env(draw, env_handle(scene.model, scene.data, scene.robot))
    mujoco.mj_forward(scene.model, scene.data)
    return scene


def randomize_scene(scene: Scene, spec: RandomizationSpec, rng: np.random.Generator) -> tuple[Scene, dict]:
    """Draw from `spec` with `rng` and apply it; returns (scene to use, the draw)."""
    draw = sample(spec, rng, draw_targets(scene.model, scene.robot))
    return apply_draw(scene, draw), draw
