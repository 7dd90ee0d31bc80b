"""Symbols grounded in the simulator: predicates evaluated on MuJoCo state, and reset states
sampled from a problem's initial facts.

    scene, binding = demoforge.scenes.build_task_scene(task, params, draw)
    atoms = abstract(scene.model, scene.data, binding)      # frozenset of Atom
    state = sample_reset_state(scene, binding, params, draw, reset_rng(params, seed, 0, k))
"""

from demoforge.symbolic.abstract import abstract, disagreement
from demoforge.symbolic.binding import Binding, SymbolError, Tolerances, bind_symbols
from demoforge.symbolic.orientation import FACES, YAWS, block_rotation, face_up, rotation_quat, yaw_of
from demoforge.symbolic.predicates import EVALUATORS, Geometry, measure
from demoforge.symbolic.reset import (
    BlockPose,
    ResetOptions,
    ResetState,
    poses_to_json,
    reset_rng,
    reset_seed_key,
    sample_reset_state,
)

__all__ = [
    "EVALUATORS", "FACES", "YAWS", "Binding", "BlockPose", "Geometry", "ResetOptions", "ResetState", "SymbolError",
    "Tolerances", "abstract", "bind_symbols", "block_rotation", "disagreement", "face_up", "measure",
    "poses_to_json", "reset_rng", "reset_seed_key", "rotation_quat", "sample_reset_state", "yaw_of",
]
