"""The environment state a state-based policy sees: the task's object poses, in a fixed order.

Both `bake --environment-state` (from each recorded `sim.state` row) and the simulator env
(`demoforge.gym.family`, the lerobot plugin) compute `observation.environment_state` with
`environment_state`, so a policy trained on one reads the other.

Order: the objects of the goal's atoms in order of first appearance (for `stack_three`,
(on a b) (on b c) gives a, b, c: top to bottom; for `pnp`, the block then its target
region), then the problem's other blocks (distractors) by name. The order carries the
goal's roles, so object 0 of every episode plays the same part whatever its colour.

Per object 10 numbers: position [m] and orientation (MuJoCo wxyz quaternion, sign chosen
so w >= 0) in the world frame, then the object's position relative to the tool centre point
(object minus TCP, world axes [m]), as robosuite's `gripper_to_cube_pos`: what a grasp must
drive to zero, so a small state-based policy need not learn the arm's forward kinematics to
aim. A block reads its free joint; a region (drawn, never moved) is its rectangle's centre on
the table top with the identity orientation. Names are roles,
`object_<k>.<x|y|z|qw|qx|qy|qz|dx|dy|dz>`, the same for every episode; `objects` gives each
episode's own names. The TCP position is the arm's forward kinematics at the same qpos
(`tcp_positions`), never a stale MuJoCo quantity, so a recorded `sim.state` row and the live
simulator give the same numbers.

Two kinds (`KINDS`): `objects`, the above; `goal`, only the goal's target locations (the
regions it names, in goal order; the same 10 numbers each): what the task asks, with no object
pose, for a policy that sees the objects in its cameras. A pnp goal picks one of two regions
that look alike, so without it a pixel policy cannot know where to place.

Goal symbols: a goal atom whose argument is an orientation symbol (a face of `FACES`, as in
flip's `(face_up a px)`, or a yaw step of `YAWS`, as in rotate's `(yaw a yaw90)`) names a target
no object pose carries, so both kinds end with it, one-hot: per such argument, in goal order,
one number per symbol of its set (`goal_<j>.<symbol>`, 1 for the goal's). Without it a policy
sees where the block is but not which face or heading it must end with. A goal with no such
symbol (stack, unstack, pnp) adds nothing, so its width is 10 numbers per object.

Goal faces now: the `objects` kind also gives, per face goal (`(face_up x f)`), where face f of
block x points in the world now (its outward unit axis, `goal_<j>.face_<x|y|z>`), before the
one-hot part; (0, 0, 1) once the goal holds. The one-hot names the face in the block's frame,
so a policy would have to compose it with the block's quaternion to know which way to tip the
block; this gives the composition, the push direction readable off its horizontal part. The
`goal` kind (no object pose, for pixel policies) leaves it out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from demoforge.errors import DemoforgeError
from demoforge.tasks.families import FACES, YAWS

POSE = ("x", "y", "z", "qw", "qx", "qy", "qz")
TO_TCP = ("dx", "dy", "dz")  # object position minus TCP position [m]
PER_OBJECT = len(POSE) + len(TO_TCP)  # numbers per object
SYMBOL_SETS = (FACES, YAWS)  # goal arguments given one-hot (see "Goal symbols" in the module docstring)


@dataclass(frozen=True)
class ObjectLayout:
    """Which qpos columns (or fixed pose) each object of the environment state reads."""

    objects: tuple[str, ...]  # the problem's object names, in state order
    qpos: tuple[int, ...]  # per object: qpos address of its free joint, -1 for a fixed object (region)
    fixed: np.ndarray  # (k, 7) pose of each fixed object (rows of moving objects unused)
    goal: np.ndarray = field(default_factory=lambda: np.zeros(0))  # the goal symbols, one-hot (`goal_code`), appended after the objects
    goal_names: tuple[str, ...] = ()  # a name per number of `goal`
    faces: tuple[tuple[int, int, float], ...] = ()  # per face goal: (object row, block axis 0-2, sign): "Goal faces now"
    face_names: tuple[str, ...] = ()  # three per face goal

    @property
    def width(self) -> int:
        return PER_OBJECT * len(self.objects) + 3 * len(self.faces) + len(self.goal)

    @property
    def names(self) -> list[str]:
        """A feature name per number of the environment state."""
        return state_names(len(self.objects)) + list(self.face_names) + list(self.goal_names)


def state_names(n_objects: int) -> list[str]:
    """Feature names of an environment state of `n_objects` objects (roles, not colours)."""
    return [f"object_{k}.{c}" for k in range(n_objects) for c in (*POSE, *TO_TCP)]


def object_order(goal: list[tuple], blocks: tuple[str, ...], regions: tuple[str, ...]) -> tuple[str, ...]:
    """Goal objects by first appearance, then the remaining blocks sorted (see the module docstring)."""
    known = set(blocks) | set(regions)
    out: list[str] = []
    for atom in goal:
        for arg in atom[1:]:
            if arg in known and arg not in out:
                out.append(arg)
    return tuple(out + sorted(b for b in blocks if b not in out))


def _goal_symbols(goal: list[tuple]):
    """(j, atom, argument, its symbol set) for each orientation-symbol argument of the goal atoms,
    `j` counting them in goal order (the `goal_<j>` of the feature names)."""
    j = 0
    for atom in goal:
        for arg in atom[1:]:
            symbols = next((s for s in SYMBOL_SETS if arg in s), None)
            if symbols is not None:
                yield j, atom, arg, symbols
                j += 1


def goal_code(goal: list[tuple]) -> tuple[np.ndarray, tuple[str, ...]]:
    """(one-hot goal symbols, their names) of the goal atoms `goal` (see "Goal symbols" in the
    module docstring); empty when the goal names no orientation symbol."""
    code: list[float] = []
    names: list[str] = []
    for j, _, arg, symbols in _goal_symbols(goal):
        code.extend(float(s == arg) for s in symbols)
        names.extend(f"goal_{j}.{s}" for s in symbols)
    return np.asarray(code, dtype=np.float64), tuple(names)


def object_layout(scene, binding, goal: list[tuple]) -> ObjectLayout:
    """The layout of a scene bound to its task (`goal`: the goal atoms, in the goal's order)."""
    order = object_order(goal, binding.blocks, binding.regions)
    missing = [b for b in order if b in binding.blocks and b not in scene.prop_qpos]
    if missing:
        raise DemoforgeError(f"environment state: blocks {missing} have no free joint in the scene; "
                             f"free props: {sorted(scene.prop_qpos)}")
    fixed = np.zeros((len(order), 7))
    fixed[:, 3] = 1.0
    qpos = []
    for k, name in enumerate(order):
        if name in binding.blocks:
            qpos.append(int(scene.prop_qpos[name]))
        else:
            x0, x1, y0, y1 = binding.region_box[binding.regions.index(name)]
            fixed[k, :3] = ((x0 + x1) / 2, (y0 + y1) / 2, binding.table_top_z)
            qpos.append(-1)
    return ObjectLayout(order, tuple(qpos), fixed, *goal_code(goal), *goal_faces(goal, order, tuple(qpos)))


def goal_faces(goal: list[tuple], order: tuple[str, ...],
               qpos: tuple[int, ...]) -> tuple[tuple[tuple[int, int, float], ...], tuple[str, ...]]:
    """(per face goal of a moving object: its row in `order`, block axis, sign; their names)
    (see "Goal faces now" in the module docstring)."""
    faces: list[tuple[int, int, float]] = []
    names: list[str] = []
    for j, atom, arg, _ in _goal_symbols(goal):
        if arg in FACES and atom[1] in order and qpos[order.index(atom[1])] >= 0:
            faces.append((order.index(atom[1]), "xyz".index(arg[1]), 1.0 if arg[0] == "p" else -1.0))
            names.extend(f"goal_{j}.face_{c}" for c in "xyz")
    return tuple(faces), tuple(names)


KINDS = ("objects", "goal")  # what observation.environment_state holds (see the module docstring)


def layout_of(kind: str, scene, binding, goal: list[tuple]) -> ObjectLayout:
    """The layout of environment-state kind `kind` (one of KINDS) for a bound scene."""
    if kind not in KINDS:
        raise DemoforgeError(f"environment state kind {kind!r} is not one of {list(KINDS)}")
    layout = object_layout(scene, binding, goal)
    if kind == "objects":
        return layout
    keep = [k for k, adr in enumerate(layout.qpos) if adr < 0]
    if not keep and not len(layout.goal):
        raise DemoforgeError(f"environment state 'goal': the goal {[' '.join(a) for a in goal]} names no region "
                             "and no face or yaw, so it has no target to give; use the 'objects' kind for this task")
    return ObjectLayout(tuple(layout.objects[k] for k in keep), tuple(layout.qpos[k] for k in keep),
                        layout.fixed[keep], layout.goal, layout.goal_names)  # no goal faces: they read object poses


def environment_state(layout: ObjectLayout, qpos: np.ndarray, tcp: np.ndarray) -> np.ndarray:
    """(..., 10 k) object states for qpos rows (..., nq) with the TCP at `tcp` (..., 3) [m]
    (see the module docstring)."""
    qpos = np.asarray(qpos, dtype=np.float64)
    tcp = np.asarray(tcp, dtype=np.float64)
    lead = qpos.shape[:-1]
    if tcp.shape != (*lead, 3):
        raise DemoforgeError(f"environment state: TCP positions {tcp.shape} do not match qpos rows {qpos.shape}")
    out = np.zeros((*lead, len(layout.objects), PER_OBJECT))
    out[..., :len(POSE)] = layout.fixed
    for k, adr in enumerate(layout.qpos):
        if adr >= 0:
            pose = qpos[..., adr:adr + 7]
            sign = np.where(pose[..., 3:4] < 0, -1.0, 1.0)
            out[..., k, :3] = pose[..., :3]
            out[..., k, 3:7] = pose[..., 3:] * sign
    out[..., len(POSE):] = out[..., :3] - tcp[..., None, :]
    parts = [out.reshape(*lead, PER_OBJECT * len(layout.objects))]
    parts += [face_axis(out[..., k, 3:7], axis) * sign for k, axis, sign in layout.faces]
    if len(layout.goal):
        parts.append(np.broadcast_to(layout.goal, (*lead, len(layout.goal))))
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=-1)


def face_axis(quat: np.ndarray, axis: int) -> np.ndarray:
    """(..., 3) column `axis` of the rotation matrix of unit quaternions (..., 4) (MuJoCo wxyz):
    where the block's axis points in the world."""
    w, x, y, z = np.moveaxis(quat, -1, 0)
    cols = ((1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 2 * (x * z - w * y)),
            (2 * (x * y - w * z), 1 - 2 * (x * x + z * z), 2 * (y * z + w * x)),
            (2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)))
    return np.stack(cols[axis], axis=-1)
