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

import weakref
from collections.abc import Callable
from dataclasses import dataclass

import mujoco
import numpy as np

from demoforge.symbolic.binding import Binding
from demoforge.symbolic.orientation import FACES, YAWS


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
    face_code: np.ndarray  # (B,) index into FACES of the face up, -1 when tilted
    yaw_code: np.ndarray  # (B,) index into YAWS of the yaw step, -1 when tilted or between steps
    names: tuple[dict[str, int], dict[str, int]]  # block name -> row, region name -> row of Binding.region_box

    @property
    def index(self) -> dict[str, int]:
        return self.names[0]

    @property
    def region(self) -> dict[str, int]:
        return self.names[1]

    @property
    def face(self) -> tuple[str | None, ...]:
        """Face up per block, None when tilted."""
        return tuple(FACES[c] if c >= 0 else None for c in self.face_code)

    @property
    def yaw(self) -> tuple[str | None, ...]:
        """Yaw step per block, None when tilted or between steps."""
        return tuple(YAWS[c] if c >= 0 else None for c in self.yaw_code)


def measure(model: mujoco.MjModel, data: mujoco.MjData, binding: Binding) -> Geometry:
    """Read block poses, speeds and contacts from `data` (forward kinematics must be current)."""
    c = _constants(model, binding)
    n = c.n
    pos = data.xpos[binding.body]
    rot = data.xmat[binding.body].reshape(n, 3, 3)
    up = rot[:, 2, :]  # world z component of each block axis
    abs_up = np.abs(up)
    half_z = (abs_up * binding.half).sum(axis=1)
    bottom, top = pos[:, 2] - half_z, pos[:, 2] + half_z
    vel = data.qvel[c.lin_vel]
    speed = np.sqrt((vel * vel).sum(axis=1))

    touch_table, touch_block, held = c.none.copy(), c.none.copy(), c.none
    if data.ncon:
        pairs = data.contact.geom[: data.ncon]
        both = np.concatenate([pairs, pairs[:, ::-1]])  # (block geom?, other geom) both ways round
        mine = c.row[both[:, 0]]
        both, mine = both[mine >= 0], mine[mine >= 0]
        other = both[:, 1]
        touch_table[mine[other == binding.table_geom]] = True
        touch_block[mine[c.row[other] >= 0]] = True
        if c.finger_geom is not None:  # held: a geom of every finger touches the block, nothing else does
            finger_touch = np.zeros((len(c.finger_geom), n), bool)
            f, k = np.nonzero(c.finger_geom[:, other])
            finger_touch[f, mine[k]] = True
            held = finger_touch.all(axis=0) & ~touch_table & ~touch_block

    axis = abs_up.argmax(axis=1)
    up_k = up[c.rows, axis]
    flat = np.abs(up_k) >= c.cos_tilt
    face_code = np.where(flat, 2 * axis + (up_k < 0), -1)  # index into FACES, -1 when tilted
    ref = rot[c.rows, :, (axis + 1) % 3]  # world heading of the reference axis (x->y, y->z, z->x)
    heading = np.arctan2(ref[:, 1], ref[:, 0])
    step = np.round(heading / (np.pi / 2)).astype(int) % 4
    off = np.abs((heading - step * np.pi / 2 + np.pi) % (2 * np.pi) - np.pi)
    yaw_code = np.where(flat & (off <= c.yaw_tol), step, -1)  # index into YAWS, -1 when tilted or between
    gap = np.abs(bottom[:, None] - top) <= c.z_gap
    d = pos[:, None, :2] - pos[:, :2]
    over = (d * d).sum(axis=2) <= c.support_sq
    on_geom = gap & over & c.not_self & flat[:, None]
    x, y = pos[:, 0], pos[:, 1]
    tx0, tx1, ty0, ty1 = binding.table_box
    on_table_geom = (np.abs(bottom - binding.table_top_z) <= c.z_gap) & (x >= tx0) & (x <= tx1) & (y >= ty0) \
        & (y <= ty1) & flat
    return Geometry(pos, rot, bottom, top, speed, on_geom, on_table_geom, touch_table, touch_block, held, flat,
                    face_code, yaw_code, c.names)


@dataclass(frozen=True, eq=False)
class _Constants:
    """What `measure` needs of a binding and its model, built once."""

    model: mujoco.MjModel
    n: int
    rows: np.ndarray  # arange(B)
    row: np.ndarray  # geom id -> block row, -1 for other geoms
    finger_geom: np.ndarray | None  # (fingers, ngeom) bool: geom belongs to finger f; None without fingers
    lin_vel: np.ndarray  # (B, 3) qvel addresses of each block's linear velocity
    none: np.ndarray  # (B,) False
    not_self: np.ndarray  # (B, B) ~eye
    cos_tilt: float
    yaw_tol: float
    z_gap: float
    support_sq: np.ndarray  # (1, B) squared horizontal reach of y's support [m^2]
    names: tuple[dict[str, int], dict[str, int]]


def _constants(model: mujoco.MjModel, binding: Binding) -> _Constants:
    c = _CACHE.get(binding)
    if c is None or c.model is not model:
        n, tol = len(binding.blocks), binding.tolerances
        row = np.full(model.ngeom, -1)
        row[binding.geom] = np.arange(n)
        finger_geom = None
        if binding.fingers:
            finger_geom = np.stack([np.isin(model.geom_bodyid, bodies) for bodies in binding.fingers])
        reach = tol.support_frac * binding.half.min(axis=1)[None, :] if n else np.zeros((1, 0))
        c = _CACHE[binding] = _Constants(
            model, n, np.arange(n), row, finger_geom, binding.qvel[:, None] + np.arange(3), np.zeros(n, bool),
            ~np.eye(n, dtype=bool), float(np.cos(tol.tilt_rad)), tol.yaw_rad, tol.z_gap_m, reach * np.abs(reach),
            ({b: i for i, b in enumerate(binding.blocks)}, {r: i for i, r in enumerate(binding.regions)}))
    return c


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # binding -> _Constants (weakly held)


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
    c = geo.face_code[geo.index[x]]
    return c >= 0 and FACES[c] == face


def yaw_is(geo: Geometry, b: Binding, x: str, angle: str) -> bool:
    c = geo.yaw_code[geo.index[x]]
    return c >= 0 and YAWS[c] == angle


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
