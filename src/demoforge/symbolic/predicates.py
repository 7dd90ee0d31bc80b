"""One evaluator per predicate of the blocks domain, over the live MuJoCo state.

`measure(model, data, binding)` reads the state once into a `Geometry` (block poses,
heights, speeds, contacts); each evaluator then answers one ground atom from it:

- on(x, y): x lies flat (some face within `tilt_rad` of up), its lowest point within `z_gap_m`
  of y's highest, its centre over y's top face (horizontal offset <= `support_frac` x y's
  smaller half edge), it is slower than `rest_speed_mps` and not held.
- on_table(x): x lies flat, its lowest point within `z_gap_m` of the table top, its centre
  over the table, at rest and not held. A block balanced on an edge is on nothing.
- holding(x): a geom of every finger touches x, and x touches neither the table nor a block.
- hand_empty: no block is held.
- clear(x): x is not held and no block sits on it (the `on` geometry, whatever its speed).
- face_up(x, f): block axis f within `tilt_rad` of world up.
- yaw(x, a): some face is up and its reference axis heads within `yaw_rad` of a's 90-degree step.
- in_region(x, r): on_table(x) and x's centre inside r's rectangle (grown by `region_margin_m`).

Heights use the rotated box: half height = sum_j |world_R_block[2, j]| x half edge j.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import mujoco
import numpy as np

from demoforge.symbolic.binding import Binding
from demoforge.symbolic.orientation import face_up, yaw_of


@dataclass(frozen=True, eq=False)
class Geometry:
    """The state read once for all predicates; arrays indexed like `Binding.blocks`."""

    pos: np.ndarray  # (B, 3) block centres in the world [m]
    rot: np.ndarray  # (B, 3, 3) world_R_block
    bottom: np.ndarray  # (B,) lowest point [m]
    top: np.ndarray  # (B,) highest point [m]
    speed: np.ndarray  # (B,) linear speed [m/s]
    on_geom: np.ndarray  # (B, B) bool: x rests on y geometrically (no speed check)
    on_table_geom: np.ndarray  # (B,) bool: rests on the table geometrically
    touch_table: np.ndarray  # (B,) bool: in contact with the table top
    touch_block: np.ndarray  # (B,) bool: in contact with another block
    held: np.ndarray  # (B,) bool: holding
    flat: np.ndarray  # (B,) bool: some face within the tilt tolerance of up
    face: tuple[str | None, ...]  # face up per block, None when tilted
    yaw: tuple[str | None, ...]  # yaw step per block, None when tilted or between steps
    index: dict[str, int]  # block name -> row
    region: dict[str, int]  # region name -> row of Binding.region_box


def measure(model: mujoco.MjModel, data: mujoco.MjData, binding: Binding) -> Geometry:
    """Read block poses, speeds and contacts from `data` (forward kinematics must be current)."""
    tol = binding.tolerances
    n = len(binding.blocks)
    pos = data.xpos[binding.body].copy()
    rot = data.xmat[binding.body].reshape(n, 3, 3).copy()
    half_z = np.einsum("bj,bj->b", np.abs(rot[:, 2, :]), binding.half)
    bottom, top = pos[:, 2] - half_z, pos[:, 2] + half_z
    speed = np.linalg.norm(data.qvel[binding.qvel[:, None] + np.arange(3)], axis=1) if n else np.zeros(0)

    row = np.full(model.ngeom, -1)  # geom id -> block row, -1 for other geoms
    row[binding.geom] = np.arange(n)
    pairs = np.asarray(data.contact.geom[: data.ncon], dtype=int).reshape(-1, 2)
    both = np.concatenate([pairs, pairs[:, ::-1]])  # (block geom?, other geom) both ways round
    both = both[row[both[:, 0]] >= 0]
    mine, other = row[both[:, 0]], both[:, 1]
    touch_table, touch_block = np.zeros(n, bool), np.zeros(n, bool)
    touch_table[mine[other == binding.table_geom]] = True
    touch_block[mine[row[other] >= 0]] = True
    finger_touch = np.zeros((n, len(binding.fingers)), bool)
    other_body = model.geom_bodyid[other]
    for f, bodies in enumerate(binding.fingers):
        finger_touch[mine[np.isin(other_body, bodies)], f] = True
    held = finger_touch.all(axis=1) & ~touch_table & ~touch_block if binding.fingers else np.zeros(n, bool)

    flat = np.abs(rot[:, 2, :]).max(axis=1) >= np.cos(tol.tilt_rad) if n else np.zeros(0, bool)
    faces = tuple(face_up(r, tol.tilt_rad) for r in rot)
    yaws = tuple(None if f is None else yaw_of(r, f, tol.yaw_rad) for r, f in zip(rot, faces, strict=True))
    gap = np.abs(bottom[:, None] - top[None, :]) <= tol.z_gap_m
    offset = np.linalg.norm(pos[:, None, :2] - pos[None, :, :2], axis=2)
    over = offset <= tol.support_frac * binding.half.min(axis=1)[None, :]
    on_geom = gap & over & ~np.eye(n, dtype=bool) & flat[:, None]
    tx0, tx1, ty0, ty1 = binding.table_box
    over_table = (pos[:, 0] >= tx0) & (pos[:, 0] <= tx1) & (pos[:, 1] >= ty0) & (pos[:, 1] <= ty1)
    on_table_geom = (np.abs(bottom - binding.table_top_z) <= tol.z_gap_m) & over_table & flat
    return Geometry(pos, rot, bottom, top, speed, on_geom, on_table_geom, touch_table, touch_block, held, flat,
                    faces, yaws,
                    {b: i for i, b in enumerate(binding.blocks)}, {r: i for i, r in enumerate(binding.regions)})


def _at_rest(geo: Geometry, b: Binding, i: int) -> bool:
    return bool(geo.speed[i] <= b.tolerances.rest_speed_mps)


def on(geo: Geometry, b: Binding, x: str, y: str) -> bool:
    i, j = geo.index[x], geo.index[y]
    return bool(geo.on_geom[i, j]) and not geo.held[i] and _at_rest(geo, b, i)


def on_table(geo: Geometry, b: Binding, x: str) -> bool:
    i = geo.index[x]
    return bool(geo.on_table_geom[i]) and not geo.held[i] and _at_rest(geo, b, i)


def holding(geo: Geometry, b: Binding, x: str) -> bool:
    return bool(geo.held[geo.index[x]])


def hand_empty(geo: Geometry, b: Binding) -> bool:
    return not geo.held.any()


def clear(geo: Geometry, b: Binding, x: str) -> bool:
    i = geo.index[x]
    return not geo.held[i] and not geo.on_geom[:, i].any()


def face_up_is(geo: Geometry, b: Binding, x: str, face: str) -> bool:
    return geo.face[geo.index[x]] == face


def yaw_is(geo: Geometry, b: Binding, x: str, angle: str) -> bool:
    return geo.yaw[geo.index[x]] == angle


def in_region(geo: Geometry, b: Binding, x: str, r: str) -> bool:
    if not on_table(geo, b, x):
        return False
    m = b.tolerances.region_margin_m
    x0, x1, y0, y1 = b.region_box[geo.region[r]]
    px, py = geo.pos[geo.index[x], :2]
    return bool(x0 - m <= px <= x1 + m and y0 - m <= py <= y1 + m)


# Predicate name -> evaluator(geometry, binding, *object names) -> bool.
EVALUATORS: dict[str, Callable[..., bool]] = {
    "on": on,
    "on_table": on_table,
    "holding": holding,
    "hand_empty": hand_empty,
    "clear": clear,
    "face_up": face_up_is,
    "yaw": yaw_is,
    "in_region": in_region,
}
