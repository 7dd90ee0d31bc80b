"""Reset states: physical start poses sampled from a problem's initial facts.

From the init: towers bottom-up from `on` / `on_table`, each block's face and yaw from
`face_up` / `yaw`, a tower base inside its region for `in_region`, otherwise inside the
sidecar's placement windows (several disjoint intervals per axis) with its centre kept
out of every region. Bases are placed with their whole footprint inside the window and
apart from other towers by `clearance_m`. The arm takes the draw's start pose (home unless the
draw carries one), or, given `robot_start` windows, a start drawn for this reset state
(`demoforge.randomize.robot_start`: IK, self-collision) from a child of the reset's generator,
drawn again while it touches the table or a block (up to `RobotStartParams.tries` per attempt).
The scene then settles for `settle_s`, and a sample is kept only if `abstract` gives back
exactly the initial facts; otherwise the next attempt starts, up to `attempts`.
A kept state is a full physics snapshot (`demoforge.sim.snapshot`, time reset to 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from demoforge.errors import listing
from demoforge.randomize.robot_start import RobotStart, RobotStartParams, check_robot_start, describe, propose_start
from demoforge.randomize.scene import SceneDraw
from demoforge.sim import Scene, snapshot
from demoforge.sim.linkage import linkage_positions
from demoforge.symbolic.abstract import abstract, disagreement
from demoforge.symbolic.binding import Binding, SymbolError
from demoforge.symbolic.orientation import block_rotation, rotation_quat, top_half_edge
from demoforge.tasks.scene import Interval, SceneParams

_RESET = 3  # spawn-key domain of reset-state seeds (scene draws use 1 and 2)


@dataclass(frozen=True)
class ResetOptions:
    """Effort and margins of reset sampling."""

    attempts: int = 20  # full samples (place, settle, abstract) before giving up
    placement_tries: int = 200  # tries to place one tower base before the attempt fails
    settle_s: float = 0.25  # physics time the sample settles before it is abstracted [s]
    clearance_m: float = 0.015  # smallest horizontal gap between towers' footprints [m]
    region_keepout_m: float = 0.01  # centres of blocks outside regions stay this far outside them [m]
    drop_m: float = 0.0005  # vertical gap left under each block when placed [m]
    stack_jitter: float = 0.1  # horizontal offset of a stacked block, as a fraction of its support's half edge


@dataclass(frozen=True)
class BlockPose:
    """Where one block was placed (before settling)."""

    block: str  # PDDL object
    support: str  # "table" or the block it stands on
    face: str  # face up
    yaw: str  # yaw step
    region: str | None  # region it was placed in
    pos: tuple[float, float, float]  # centre in the world [m]
    quat: tuple[float, float, float, float]  # wxyz


@dataclass(frozen=True, eq=False)
class ResetState:
    """A kept sample: the physics snapshot and what was sampled."""

    problem: str  # PDDL problem name
    state: np.ndarray  # full integration state (demoforge.sim.snapshot), float64
    poses: tuple[BlockPose, ...]  # sampled block poses, sorted by block
    attempts: int  # samples tried, this one included
    robot_start: RobotStart | None = None  # the arm's start (drawn, or the draw's); None: home


def reset_seed_key(params: SceneParams, seed: int, profile: int, index: int) -> tuple[int, tuple[int, ...]]:
    """(entropy, spawn key) of reset state `index` of profile `profile` in a package built with `seed`."""
    return params.seed, (_RESET, seed, profile, index)


def reset_rng(params: SceneParams, seed: int, profile: int, index: int) -> np.random.Generator:
    """Generator of reset state `index` of scene profile `profile` in a package built with `seed`."""
    entropy, key = reset_seed_key(params, seed, profile, index)
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=key))


@dataclass(frozen=True)
class _Layout:
    towers: tuple[tuple[str, ...], ...]  # bottom-up, towers sorted by base
    face: dict[str, str]
    yaw: dict[str, str]
    region: dict[str, str]  # tower base -> region


def _layout(binding: Binding) -> _Layout:
    task = binding.task
    init = set(task.init)
    problems = []
    below = {a[1]: a[2] for a in init if a[0] == "on"}
    on_table = {a[1] for a in init if a[0] == "on_table"}
    held = sorted(a[1] for a in init if a[0] == "holding")
    face, yaw, region = {}, {}, {}
    fluents = {a[0] for a in binding.candidates}
    for b in binding.blocks:
        faces = sorted(a[2] for a in init if a[0] == "face_up" and a[1] == b)
        yaws = sorted(a[2] for a in init if a[0] == "yaw" and a[1] == b)
        regions = sorted(a[2] for a in init if a[0] == "in_region" and a[1] == b)
        if "face_up" in fluents and len(faces) != 1:
            problems.append(f"block {b!r} needs exactly one face_up fact, has {faces}")
        if "yaw" in fluents and len(yaws) != 1:
            problems.append(f"block {b!r} needs exactly one yaw fact, has {yaws}")
        if len(regions) > 1:
            problems.append(f"block {b!r} is in several regions {regions}; they cannot overlap")
        supports = (b in on_table) + (b in below) + (b in held)
        if supports != 1:
            problems.append(f"block {b!r} needs exactly one of on_table, on or holding, has {supports}")
        if regions and b not in on_table:
            problems.append(f"block {b!r} is in_region {regions[0]} but not on_table")
        face[b] = faces[0] if faces else "pz"
        yaw[b] = yaws[0] if yaws else "yaw0"
        if regions:
            region[b] = regions[0]
    if held:
        problems.append(f"init holds {held}: reset sampling starts with an empty hand; give the block a support")
    above = {y: x for x, y in below.items()}
    towers = []
    for base in sorted(on_table):
        tower, seen = [base], {base}
        while tower[-1] in above:
            nxt = above[tower[-1]]
            if nxt in seen:
                break
            tower.append(nxt)
            seen.add(nxt)
        towers.append(tuple(tower))
    placed = {b for t in towers for b in t}
    lost = sorted(set(binding.blocks) - placed - set(held))
    if lost:
        problems.append(f"blocks {lost} do not stand on the table through on facts (a cycle or two blocks on one)")
    if problems:
        raise SymbolError(f"initial facts of {task.name!r} ({task.problem_file}) cannot be sampled:"
                          + listing(problems, indent=""))
    return _Layout(tuple(towers), face, yaw, region)


def _pick(rng: np.random.Generator, windows: list[Interval], half: float) -> float | None:
    usable = [(lo + half, hi - half) for lo, hi in windows if hi - lo >= 2 * half]
    if not usable:
        return None
    lengths = np.array([hi - lo for lo, hi in usable])
    k = int(rng.choice(len(usable), p=lengths / lengths.sum())) if lengths.sum() > 0 else 0
    lo, hi = usable[k]
    return float(rng.uniform(lo, hi)) if hi > lo else lo


def _place(scene: Scene, binding: Binding, params: SceneParams, layout: _Layout, rng: np.random.Generator,
           opts: ResetOptions) -> tuple[list[BlockPose], str | None]:
    idx = {b: i for i, b in enumerate(binding.blocks)}
    rot = {b: block_rotation(layout.face[b], layout.yaw[b]) for b in binding.blocks}
    # Horizontal half extents of each rotated block: its footprint's bounding box.
    extent = {b: np.abs(rot[b][:2]) @ binding.half[idx[b]] for b in binding.blocks}
    height = {b: float(np.abs(rot[b][2]) @ binding.half[idx[b]]) for b in binding.blocks}
    ox, oy = binding.table_origin
    regions = dict(params.regions)
    taken: list[tuple[float, float, float, float]] = []  # world footprints [x0, x1, y0, y1]
    poses = []
    for tower in layout.towers:
        # Level k > 0 may sit off-centre by up to stack_jitter x the smaller half edge of its
        # support's top face (a plate's radius, not its thickness; a cube's half edge).
        jitter = [0.0] + [opts.stack_jitter * float(top_half_edge(binding.half[idx[b]], np.argmax(np.abs(rot[b][2])))) for b in tower[:-1]]
        reach = np.max([extent[b] for b in tower], axis=0) + sum(jitter)
        base = tower[0]
        if base in layout.region:
            r = regions[layout.region[base]]
            wx, wy = [r.x_m], [r.y_m]
        else:
            wx, wy = list(params.placement_x_m), list(params.placement_y_m)
        for _ in range(opts.placement_tries):
            x, y = _pick(rng, wx, float(reach[0])), _pick(rng, wy, float(reach[1]))
            if x is None or y is None:
                where = f"region {layout.region[base]!r}" if base in layout.region else "the placement windows"
                return [], f"tower {list(tower)} ({2 * reach[0]:.3f} x {2 * reach[1]:.3f} m) does not fit in {where}"
            box = (ox + x - reach[0], ox + x + reach[0], oy + y - reach[1], oy + y + reach[1])
            c = opts.clearance_m
            if any(box[0] < t[1] + c and t[0] < box[1] + c and box[2] < t[3] + c and t[2] < box[3] + c for t in taken):
                continue
            k = opts.region_keepout_m
            if base not in layout.region and any(
                r.x_m[0] - k <= x <= r.x_m[1] + k and r.y_m[0] - k <= y <= r.y_m[1] + k for _, r in params.regions
            ):
                continue
            break
        else:
            return [], (f"no free spot for tower {list(tower)} after {opts.placement_tries} tries; widen the "
                        "placement windows, lower ResetOptions.clearance_m or use fewer or smaller blocks")
        taken.append(box)
        z = binding.table_top_z
        px, py = ox + x, oy + y
        for level, b in enumerate(tower):
            if level:  # offset from the block below, so the stack can lean but every block stays supported
                dx, dy = rng.uniform(-1, 1, size=2) * jitter[level]
                px, py = px + dx, py + dy
            z += opts.drop_m + height[b]
            pos = (float(px), float(py), float(z))
            z += height[b]
            poses.append(BlockPose(b, "table" if level == 0 else tower[level - 1], layout.face[b], layout.yaw[b],
                                   layout.region.get(b), pos, rotation_quat(rot[b])))
    return sorted(poses, key=lambda p: p.block), None


def _apply(scene: Scene, poses: list[BlockPose], start: RobotStart | None) -> None:
    m, d, robot = scene.model, scene.data, scene.robot
    mujoco.mj_resetData(m, d)
    d.qpos[:] = m.key_qpos[0] if m.nkey else m.qpos0  # robot home (the card's keyframe) under the props
    for p in poses:
        adr = scene.prop_qpos[p.block]
        d.qpos[adr:adr + 3] = p.pos
        d.qpos[adr + 3:adr + 7] = p.quat
    q = np.asarray(robot.card.home if start is None else start.arm_q_rad, float)
    closed = start is not None and start.gripper_closed
    d.qpos[robot.arm_qpos] = q
    d.qpos[robot.finger_qpos] = robot.finger_closed if closed else robot.finger_open
    if robot.linkage_qpos.size:  # a linkage gripper's passive joints follow, or its pads stay open
        d.qpos[robot.linkage_qpos] = linkage_positions(robot.linkage_closedness, robot.linkage_positions,
                                                       1.0 if closed else 0.0)
    d.ctrl[:] = 0.0
    d.ctrl[robot.arm_actuators] = q
    d.ctrl[robot.gripper_actuator] = robot.gripper_ctrl[1 if closed else 0]
    mujoco.mj_forward(m, d)


def _robot_contacts(scene: Scene) -> list[str]:
    m, d = scene.model, scene.data
    robot = set(scene.robot.body_ids.tolist())
    hits = set()
    for c in d.contact[: d.ncon]:
        b1, b2 = int(m.geom_bodyid[c.geom1]), int(m.geom_bodyid[c.geom2])
        if (b1 in robot) != (b2 in robot):
            other = b2 if b1 in robot else b1
            hits.add(m.body(other).name)
    return sorted(hits)


def _start(scene: Scene, poses: list[BlockPose], draw: SceneDraw, opts: RobotStartParams | None,
           rngs: tuple[np.random.Generator, np.random.Generator] | None) -> tuple[RobotStart | None, str, bool]:
    """Put the blocks at `poses` and the arm at its start: (start, why not, whether other block
    poses could help). Without `opts` the draw's start (or home) is the only one."""
    if opts is None:
        _apply(scene, poses, draw.robot_start)
        hits = _robot_contacts(scene)
        return draw.robot_start, f"the robot start pose touches {hits}" if hits else "", True
    reasons: dict[str, int] = {}
    blocks = set(scene.prop_qpos)
    for _ in range(opts.tries):
        start, why = propose_start(opts, scene.robot.card, *rngs)
        if start is not None:
            _apply(scene, poses, start)
            hits = _robot_contacts(scene)
            if not hits:
                return start, "", True
            why = f"touches {hits}"
            if blocks & set(hits):
                why = "touches a block"
        reasons[why] = reasons.get(why, 0) + 1
    tally = ", ".join(f"{n} {why}" for why, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))
    return None, (f"none of {opts.tries} robot starts drawn from the windows ({describe(opts)}) was reachable and "
                  f"collision-free ({tally}); move the windows away from the table, the blocks and the arm's limits, "
                  "or raise RobotStartParams.tries"), "touches a block" in reasons


def sample_reset_state(
    scene: Scene, binding: Binding, params: SceneParams, draw: SceneDraw, rng: np.random.Generator,
    *, options: ResetOptions = ResetOptions(), robot_start: RobotStartParams | None = None,
) -> ResetState:
    """A settled physics state of `scene` whose abstraction is exactly the task's init, the arm
    at a start drawn from `robot_start`'s windows (None: the draw's start, or home).

    `scene.data` is overwritten and left in the kept state. Raises `SymbolError` naming the
    problem and the atoms that disagreed in the last attempt."""
    task = binding.task
    layout = _layout(binding)
    expected = frozenset(task.init)
    steps = max(1, round(options.settle_s / scene.model.opt.timestep))
    rngs = None
    if robot_start is not None:
        check_robot_start(robot_start)
        # the start's own streams, spawned before any placement draw: the block poses stay
        # those of a home start, and a changed p_closed never moves a pose
        pose_rng, grip_rng = rng.spawn(1)[0].spawn(2)
        rngs = (pose_rng, grip_rng)
    last, tried = "no attempt was made (attempts < 1)", 0
    for attempt in range(1, options.attempts + 1):
        tried = attempt
        poses, why = _place(scene, binding, params, layout, rng, options)
        if why is not None:
            last = why
            continue
        start, why, retry = _start(scene, poses, draw, robot_start, rngs)
        if why:
            last = why
            if not retry:  # the arm cannot start anywhere in the windows, wherever the blocks are
                break
            continue
        mujoco.mj_step(scene.model, scene.data, steps)
        scene.data.time = 0.0
        mujoco.mj_forward(scene.model, scene.data)
        actual = abstract(scene.model, scene.data, binding)
        if actual == expected:
            return ResetState(task.name, snapshot(scene.model, scene.data), tuple(poses), attempt, start)
        last = f"after settling {options.settle_s} s the abstraction differs: {disagreement(actual, expected)}"
    raise SymbolError(
        f"no reset state of {task.name!r} ({task.problem_file}) matches its initial facts after "
        f"{tried} attempts; last attempt: {last}"
    )


def poses_to_json(poses: tuple[BlockPose, ...]) -> list[dict]:
    """Plain JSON of sampled poses (sorted keys when dumped with sort_keys)."""
    return [{"block": p.block, "support": p.support, "face": p.face, "yaw": p.yaw, "region": p.region,
             "pos_m": list(p.pos), "quat_wxyz": list(p.quat)} for p in poses]

