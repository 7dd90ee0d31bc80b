"""Snapshots of the full physics state: everything `mj_step` reads, so a restored scene
continues bit for bit as the original would have."""

from __future__ import annotations

import mujoco
import numpy as np

from demoforge.errors import SimError

# Integration state: time, qpos, qvel, act, warm-start accelerations, ctrl, mocap, eq_active,
# user data, plugin state; exactly what the next mj_step depends on.
STATE_SPEC = mujoco.mjtState.mjSTATE_INTEGRATION


def state_size(model: mujoco.MjModel) -> int:
    """Length of one snapshot vector."""
    return mujoco.mj_stateSize(model, STATE_SPEC)


def snapshot(model: mujoco.MjModel, data: mujoco.MjData) -> np.ndarray:
    """The full integration state as a float64 vector (a copy)."""
    state = np.empty(state_size(model))
    mujoco.mj_getState(model, data, state, STATE_SPEC)
    return state


def restore(model: mujoco.MjModel, data: mujoco.MjData, state: np.ndarray) -> None:
    """Put `data` back into a snapshot's state and recompute derived quantities."""
    state = np.asarray(state, dtype=np.float64)
    if state.shape != (state_size(model),):
        raise SimError(
            f"snapshot has shape {state.shape}, this model needs ({state_size(model)},): "
            "it was taken from a different model"
        )
    mujoco.mj_setState(model, data, state, STATE_SPEC)
    mujoco.mj_forward(model, data)
