"""Scenes: a declarative record built into a MuJoCo model with `mujoco.MjSpec`.

The robot is attached under the prefix `robot/` so its bodies are identifiable; props keep
their own names. Physics defaults are chosen for grasps: an elliptic friction cone with
impratio 10 (a pyramidal cone drops a held cube within seconds) and a 1/600 s step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from demoforge.errors import SimError
from demoforge.sim.materials import Material, material, material_problems
from demoforge.sim.props import Box, Prop, Vec3, add_prop, prop_problems
from demoforge.sim.robot import RobotCard, panda_card
from demoforge.sim.robot_model import RobotIndex, bind_robot, match_options, robot_spec

ROBOT_PREFIX = "robot/"
LOOKS = ("fast", "quality")
# The floor's geom group, its own (visible by default in MuJoCo's viewers): a renderer can draw
# the floor after everything else, where the table and the robot hide most of it
# (demoforge.render.canvas).
FLOOR_GROUP = 1


@dataclass(frozen=True)
class Table:
    """A table whose top is the workspace; the robot stands on it."""

    size: tuple[float, float] = (1.0, 1.2)  # top extent x, y [m]
    height: float = 0.4  # top surface above the floor [m]
    center: tuple[float, float] = (0.35, 0.0)  # top centre x, y in the world [m]
    material: str | Material = "wood"
    rgba: tuple[float, float, float, float] = (0.62, 0.5, 0.38, 1.0)


@dataclass(frozen=True)
class Light:
    """A directional light."""

    name: str
    pos: Vec3  # [m]
    dir: Vec3  # direction it shines
    diffuse: Vec3 = (0.6, 0.6, 0.6)
    castshadow: bool = True  # honoured by the quality look only


@dataclass(frozen=True)
class Camera:
    """A fixed camera aimed at a point."""

    name: str  # e.g. "front", "side"
    pos: Vec3  # [m]
    target: Vec3  # point it looks at [m]
    fovy: float = 45.0  # vertical field of view [deg]


# The default views (tests/sim/test_camera_framing.py and tests/scenes/test_framing.py check their
# figures on sampled reset states):
# - front: faces the robot from 1.6 m away, beyond the start window, 40 deg down, framing every block
#   start, every pnp region, the put-down area and the robot's start windows in a 224 px image (6 px
#   margin at least); a 4 cm block is 10.5-12.5 px wide and the gripper (TCP) is in view at every
#   sampled start. Shallower than a top-down view so the hand above a block does not hide it. It was
#   0.59 m from the start window at 22 deg down (blocks 25-40 px), which left the regions and the
#   put-down area outside the image (a pnp target at u = 279 of 224).
# - side: the overview from the robot's front right: the whole arm, every block, the regions
#   of the pnp family and the put-down area at once (a 4 cm block is about 7 px at 224 px).
DEFAULT_CAMERAS = (
    Camera("front", (1.60, 0.0, 1.50), (0.30, 0.0, 0.40), 28.0),
    Camera("side", (0.94, -1.28, 1.50), (0.20, 0.0, 0.65), 40.0),
)


@dataclass(frozen=True)
class SceneSpec:
    """Everything that defines a scene; `build_scene` turns it into a model."""

    props: tuple[Prop, ...] = ()
    robot: RobotCard = field(default_factory=panda_card)
    robot_pos: tuple[float, float] = (0.0, 0.0)  # robot base x, y on the table top [m]
    table: Table = Table()
    material: str | Material = "wood"  # default for props without their own
    lights: tuple[Light, ...] = (
        Light("key", (0.5, -0.6, 2.0), (0.0, 0.3, -1.0)),
        Light("fill", (-0.5, 0.8, 1.6), (0.4, -0.4, -1.0), (0.3, 0.3, 0.3), False),
    )
    cameras: tuple[Camera, ...] = DEFAULT_CAMERAS  # the robot card's wrist camera is added as "wrist"
    timestep: float = 1.0 / 600.0  # physics step [s]
    floor_size: tuple[float, float] = (3.0, 3.0)  # floor half extents [m]; (0, 0) = infinite (slow look)
    look: str = "fast"  # "fast" (no shadows, no MSAA) or "quality"
    framebuffer: tuple[int, int] = (640, 480)  # largest offscreen image (width, height) [px]
    cache_dir: Path | None = None  # convex-decomposition cache for mesh props


@dataclass(frozen=True, eq=False)
class Scene:
    """A built scene: the compiled model, its data and the ids that code needs."""

    spec: SceneSpec
    model: mujoco.MjModel
    data: mujoco.MjData
    robot: RobotIndex
    props: dict[str, int]  # prop name -> body id
    prop_qpos: dict[str, int]  # free prop name -> qpos address of its free joint
    cameras: dict[str, int]  # camera name ("front", "side", "wrist") -> camera id


def default_scene(**overrides) -> SceneSpec:
    """Three 4 cm cubes (red, green, blue) in front of the built-in arm."""
    z = Table().height + 0.02
    cubes = tuple(
        Box(name, (0.04, 0.04, 0.04), (0.5, y, z), rgba=rgba)
        for name, y, rgba in (("red", -0.12, (0.85, 0.15, 0.15, 1)), ("green", 0.0, (0.15, 0.7, 0.2, 1)),
                              ("blue", 0.12, (0.15, 0.3, 0.85, 1)))
    )
    return SceneSpec(**{"props": cubes, **overrides})


def scene_problems(spec: SceneSpec) -> list[str]:
    """Every reason `spec` cannot be built."""
    problems = []
    if spec.look not in LOOKS:
        problems.append(f"look {spec.look!r} is not one of {list(LOOKS)}")
    if not spec.timestep > 0:
        problems.append(f"timestep must be > 0 [s], got {spec.timestep}")
    mats = [("material", spec.material), ("table.material", spec.table.material)]
    names = [p.name for p in spec.props] + [c.name for c in spec.cameras]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"name {dup!r} is used more than once among props and cameras")
    for i, p in enumerate(spec.props):
        where = f"props[{i}] ({p.name!r})"
        if p.name.startswith(ROBOT_PREFIX) or p.name in ("table", "floor"):
            problems.append(f"{where}: name is reserved; pick another")
        if p.material is not None:
            mats.append((f"{where}.material", p.material))
        problems += prop_problems(p, where)
    for where, m in mats:
        try:
            problems += material_problems(material(m), timestep=spec.timestep, where=where)
        except SimError as exc:
            problems.append(f"{where}: {exc}")
    return problems


def scene_mjspec(spec: SceneSpec) -> mujoco.MjSpec:
    """A fresh, uncompiled MjSpec of `spec` (for structural edits such as model-level randomization)."""
    problems = scene_problems(spec)
    if problems:
        raise SimError("scene spec is invalid:\n  " + "\n  ".join(problems))
    mj = mujoco.MjSpec()
    mj.modelname = "demoforge_scene"
    mj.compiler.degree = False
    _set_options(mj, spec)
    _add_world(mj, spec)
    for prop in spec.props:
        mat = material(prop.material if prop.material is not None else spec.material)
        add_prop(mj, prop, mat, cache_dir=spec.cache_dir)
    robot = robot_spec(spec.robot)
    match_options(mj, robot)
    frame = mj.worldbody.add_frame(pos=[*spec.robot_pos, spec.table.height])
    mj.attach(robot, frame=frame, prefix=ROBOT_PREFIX)
    return mj


def build_scene(spec: SceneSpec) -> Scene:
    """Compile `spec` into a Scene reset to the robot's home pose."""
    mj = scene_mjspec(spec)
    try:
        model = mj.compile()
    except ValueError as exc:
        raise SimError(f"scene does not compile: {exc}") from exc
    return scene_from_model(spec, model)


def scene_from_model(spec: SceneSpec, model: mujoco.MjModel) -> Scene:
    """Bind a model compiled from `spec` (possibly edited since) into a Scene reset to home."""
    index = bind_robot(model, spec.robot, ROBOT_PREFIX)
    props = {p.name: model.body(p.name).id for p in spec.props}
    prop_qpos = {p.name: int(model.jnt_qposadr[model.body_jntadr[props[p.name]]]) for p in spec.props if p.free}
    cameras = {c.name: model.camera(c.name).id for c in spec.cameras}
    if index.wrist_camera is not None:
        cameras["wrist"] = index.wrist_camera
    scene = Scene(spec, model, mujoco.MjData(model), index, props, prop_qpos, cameras)
    from demoforge.sim.stepping import reset  # stepping needs Scene; import here avoids a cycle

    reset(scene)
    return scene


def _set_options(mj: mujoco.MjSpec, spec: SceneSpec) -> None:
    mj.option.timestep = spec.timestep
    mj.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    mj.option.impratio = 10.0
    mj.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    mj.visual.global_.offwidth, mj.visual.global_.offheight = spec.framebuffer
    if spec.look == "fast":
        # Shadow maps and 4x MSAA cost ~30x on a CPU rasterizer (see the reference notes).
        mj.visual.quality.offsamples = 0
        mj.visual.quality.shadowsize = 0
        # Spheres, capsules and cylinders drawn with 12 x 6 facets instead of MuJoCo's 28 x 16:
        # the same picture at 224 px (mean pixel difference 0.4 of 255), and a third less CPU
        # per frame under a shadow-casting light, whose extra passes redraw every facet.
        mj.visual.quality.numslices, mj.visual.quality.numstacks = 12, 6
        # Box faces drawn as one quad instead of 4 x 4: every light is directional, so a flat
        # face's vertices only differ in specular; the pictures differ in a soft highlight on the
        # table (mean 1 of 255 per pixel) and a shadowed frame costs a quarter less CPU.
        mj.visual.quality.numquads = 1
    else:
        mj.visual.quality.offsamples = 4
        mj.visual.quality.shadowsize = 4096
    mj.visual.headlight.ambient = [0.3, 0.3, 0.3]
    mj.visual.headlight.diffuse = [0.4, 0.4, 0.4]


def _add_world(mj: mujoco.MjSpec, spec: SceneSpec) -> None:
    world = mj.worldbody
    world.add_geom(
        name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[*spec.floor_size, 0.5],
        rgba=[0.45, 0.47, 0.5, 1.0], group=FLOOR_GROUP,
    )
    table = spec.table
    top = material(table.material)
    thickness = 0.04
    body = world.add_body(name="table", pos=[*table.center, table.height - thickness / 2])
    body.add_geom(
        name="table_top", type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[table.size[0] / 2, table.size[1] / 2, thickness / 2], rgba=list(table.rgba),
        solref=list(top.solref), solimp=list(top.solimp), friction=list(top.friction),
    )
    leg_h = (table.height - thickness) / 2
    for sx in (-1, 1):
        for sy in (-1, 1):
            body.add_geom(
                type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.025, 0.025, leg_h],
                pos=[sx * (table.size[0] / 2 - 0.04), sy * (table.size[1] / 2 - 0.04), -thickness / 2 - leg_h],
                rgba=list(table.rgba),
            )
    for light in spec.lights:
        world.add_light(
            name=light.name, pos=list(light.pos), dir=list(light.dir), diffuse=list(light.diffuse),
            castshadow=bool(light.castshadow and spec.look == "quality"),
            type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL,
        )
    for cam in spec.cameras:
        world.add_camera(name=cam.name, pos=list(cam.pos), quat=look_at_quat(cam.pos, cam.target), fovy=cam.fovy)


def look_at_quat(pos, target) -> list[float]:
    """wxyz orientation of a camera at `pos` looking at `target` [m] with the frame's +z up.
    MuJoCo cameras look along their -z with +y up."""
    z = np.asarray(pos, float) - np.asarray(target, float)
    z /= np.linalg.norm(z)
    x = np.cross([0.0, 0.0, 1.0], z)
    if np.linalg.norm(x) < 1e-9:  # looking straight down
        x = np.array([0.0, -1.0, 0.0]) if z[2] > 0 else np.array([0.0, 1.0, 0.0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.column_stack([x, y, z]).flatten())
    return quat.tolist()
