"""One evaluator per predicate of the blocks domain, over the live MuJoCo state.

`measure(model, data, binding)` reads the state once into a `Geometry` (block poses,
heights, speeds, contacts); each evaluator then answers one ground atom from it. The
reading is split in two so a recording can defer the work: `sample` copies the raw
quantities of one state (cheap, every tick) and `geometry` derives the rest for any stack
of samples at once (`stack_samples`); `measure` is the two for one state.

- on(x, y): x lies flat (some face within `tilt_rad` of up), its lowest point within `z_gap_m`
  of y's highest, its centre over y's top face (horizontal offset <= `support_frac` x the smaller
  half edge of y's top face), it is slower than `rest_speed_mps` and not held.
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

import mujoco
import numpy as np

from demoforge.symbolic.binding import Binding
from demoforge.symbolic.orientation import FACES, YAWS, top_half_edge
from demoforge.tasks import package as registry


@dataclass(frozen=True, eq=False)
class Geometry:
    """The state read once for all predicates; arrays indexed like `Binding.blocks` (with
    leading axes when made from stacked samples: the per-atom evaluators take unstacked ones)."""

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


class Sample(NamedTuple):
    """What the predicates read of one state (or, stacked, of many): block poses, velocities
    and the contacting geom pairs. A copy of a few arrays, cheap to take every tick;
    `geometry` derives everything else for a whole stack at once."""

    pos: np.ndarray  # (..., B, 3) block centres in the world [m]
    rot: np.ndarray  # (..., B, 3, 3) world_R_block
    vel: np.ndarray  # (..., B, 3) linear velocity [m/s]
    contacts: np.ndarray  # (K, 2) geom ids of every contact
    contact_row: np.ndarray  # (K,) the state (flat index over the leading axes) each contact belongs to


def sample(model: mujoco.MjModel, data: mujoco.MjData, binding: Binding) -> Sample:
    """Read block poses, velocities and contacts from `data` (forward kinematics must be current)."""
    c = _constants(model, binding)
    pairs = data.contact.geom[: data.ncon].copy()
    return Sample(data.xpos[binding.body], data.xmat[binding.body].reshape(c.n, 3, 3), data.qvel[c.lin_vel],
                  pairs, np.zeros(len(pairs), np.int64))


def stack_samples(samples: list[Sample]) -> Sample:
    """Samples of one state each -> one Sample with a leading (T,) axis."""
    rows = np.repeat(np.arange(len(samples)), [len(s.contacts) for s in samples])
    return Sample(np.stack([s.pos for s in samples]), np.stack([s.rot for s in samples]),
                  np.stack([s.vel for s in samples]), np.concatenate([s.contacts for s in samples]).reshape(-1, 2),
                  rows)


def _contact_flags(c: _Constants, binding: Binding, s: Sample, lead: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """touch_table, touch_block, held: (..., B) bool each."""
    states = int(np.prod(lead, dtype=np.int64))
    touch_table, touch_block = np.zeros((states, c.n), bool), np.zeros((states, c.n), bool)
    held = np.zeros((states, c.n), bool)
    if len(s.contacts):
        both = np.concatenate([s.contacts, s.contacts[:, ::-1]])  # (block geom?, other geom) both ways round
        at = np.concatenate([s.contact_row, s.contact_row])
        mine = c.row[both[:, 0]]
        keep = mine >= 0
        other, mine, at = both[keep, 1], mine[keep], at[keep]
        table = other == binding.table_geom
        touch_table[at[table], mine[table]] = True
        block = c.row[other] >= 0
        touch_block[at[block], mine[block]] = True
        if c.finger_geom is not None:  # held: a geom of every finger touches the block, nothing else does
            finger_touch = np.zeros((len(c.finger_geom), states, c.n), bool)
            f, k = np.nonzero(c.finger_geom[:, other])
            finger_touch[f, at[k], mine[k]] = True
            held = finger_touch.all(axis=0) & ~touch_table & ~touch_block
    shape = lead + (c.n,)
    return touch_table.reshape(shape), touch_block.reshape(shape), held.reshape(shape)


def geometry(model: mujoco.MjModel, binding: Binding, s: Sample) -> Geometry:
    """The Geometry of samples stacked along any leading axes (fields (..., B, ...))."""
    c = _constants(model, binding)
    pos, rot = s.pos, s.rot
    touch_table, touch_block, held = _contact_flags(c, binding, s, pos.shape[:-2])
    up = rot[..., 2, :]  # world z component of each block axis
    abs_up = np.abs(up)
    half_z = (abs_up * binding.half).sum(axis=-1)
    bottom, top = pos[..., 2] - half_z, pos[..., 2] + half_z
    speed = np.sqrt((s.vel * s.vel).sum(axis=-1))
    axis = abs_up.argmax(axis=-1)
    up_k = np.take_along_axis(up, axis[..., None], axis=-1)[..., 0]
    flat = np.abs(up_k) >= c.cos_tilt
    face_code = np.where(flat, 2 * axis + (up_k < 0), -1)  # index into FACES, -1 when tilted
    # world heading of the reference axis (block x -> y, y -> z, z -> x): a column of world_R_block
    ref = np.take_along_axis(rot, ((axis + 1) % 3)[..., None, None], axis=-1)[..., 0]
    heading = np.arctan2(ref[..., 1], ref[..., 0])
    step = np.round(heading / (np.pi / 2)).astype(int) % 4
    off = np.abs((heading - step * np.pi / 2 + np.pi) % (2 * np.pi) - np.pi)
    yaw_code = np.where(flat & (off <= c.yaw_tol), step, -1)  # index into YAWS, -1 when tilted or between
    gap = np.abs(bottom[..., :, None] - top[..., None, :]) <= c.z_gap
    d = pos[..., :, None, :2] - pos[..., None, :, :2]
    reach = binding.tolerances.support_frac * top_half_edge(binding.half, axis)  # y's reach
    over = (d * d).sum(axis=-1) <= (reach * np.abs(reach))[..., None, :]
    on_geom = gap & over & c.not_self & flat[..., :, None]
    x, y = pos[..., 0], pos[..., 1]
    tx0, tx1, ty0, ty1 = binding.table_box
    on_table_geom = (np.abs(bottom - binding.table_top_z) <= c.z_gap) & (x >= tx0) & (x <= tx1) & (y >= ty0) \
        & (y <= ty1) & flat
    return Geometry(pos, rot, bottom, top, speed, on_geom, on_table_geom, touch_table, touch_block, held, flat,
                    face_code, yaw_code, c.names)


def measure(model: mujoco.MjModel, data: mujoco.MjData, binding: Binding) -> Geometry:
    """Read block poses, speeds and contacts from `data` (forward kinematics must be current)."""
    return geometry(model, binding, sample(model, data, binding))


def fallen(data: mujoco.MjData, binding: Binding, margin: float) -> np.ndarray:
    """(B,) bool: the block's lowest point is more than `margin` [m] below the table top.

    The table top is the lowest surface any placement predicate (on_table, in_region, on)
    rests a block on, so a block below it is where no goal can put it: off its support and
    off the table. A block lower than it started (an unstacked one) is not fallen."""
    rot = data.xmat[binding.body].reshape(-1, 3, 3)
    bottom = data.xpos[binding.body, 2] - (np.abs(rot[:, 2, :]) * binding.half).sum(axis=-1)
    return bottom < binding.table_top_z - margin


@dataclass(frozen=True, eq=False)
class _Constants:
    """What `sample` and `geometry` need of a binding and its model, built once."""

    model: mujoco.MjModel
    n: int
    row: np.ndarray  # geom id -> block row, -1 for other geoms
    finger_geom: np.ndarray | None  # (fingers, ngeom) bool: geom belongs to finger f; None without fingers
    lin_vel: np.ndarray  # (B, 3) qvel addresses of each block's linear velocity
    not_self: np.ndarray  # (B, B) ~eye
    cos_tilt: float
    yaw_tol: float
    z_gap: float
    names: tuple[dict[str, int], dict[str, int]]


def _constants(model: mujoco.MjModel, binding: Binding) -> _Constants:
    c = _CACHE.get(binding)
    if c is None or c.model is not model:
        n, tol = len(binding.blocks), binding.tolerances
        row = np.full(model.ngeom, -1)
        for i, body in enumerate(binding.body):  # every geom of the block's body: a mesh prop has many
            row[model.geom_bodyid == body] = i
        finger_geom = None
        if binding.fingers:
            finger_geom = np.stack([np.isin(model.geom_bodyid, bodies) for bodies in binding.fingers])
        c = _CACHE[binding] = _Constants(
            model, n, row, finger_geom, binding.qvel[:, None] + np.arange(3), ~np.eye(n, dtype=bool), float(np.cos(tol.tilt_rad)), tol.yaw_rad, tol.z_gap_m,
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


# Predicate name -> evaluator(geometry, binding, *object names) -> bool, over every registered task
# package (the blocks world's evaluators above are its package's: demoforge.taskapi.blocks).
EVALUATORS: Mapping[str, Callable[..., bool]] = registry._Merged("predicates", lambda p: p.evaluate)
