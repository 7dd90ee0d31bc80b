"""Contact lint of material pairs: does a block of one material settle on a surface of another?

`lint_pair(block, surface, ...)` builds a probe scene (a free cube of `block`'s material and
size resting on a fixed slab with `surface`'s contact parameters, in the physics options of a
task scene: the same timestep, elliptic cone, impratio and integrator) and runs the contact
linter on it (`sim.lint`: C001 explosion, C002 penetration, C003 jitter). Every pair of
materials that can touch in a scene is one probe: block on table, block on block, and a finger
pad against a block (a pad's contact parameters, priority included, as the robot model has
them: `finger_surfaces`), so a material is judged with what it will touch, in a few hundredths
of a second per pair instead of a settle of the whole scene.

`Surface` carries what MuJoCo mixes a contact from: a geom's solref, solimp, friction, priority
and solmix (equal priorities mix solref and solimp by solmix and take the larger friction; the
higher priority's parameters win outright).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from demoforge.errors import SimError
from demoforge.sim.lint import LintReport, lint_contact_stability
from demoforge.sim.materials import Material

PROBE_SETTLE_S = 1.0  # simulated settle of one probe [s]


@dataclass(frozen=True)
class Surface:
    """The contact parameters of what a block rests on or is touched by."""

    label: str  # what it is in the scene, for messages: "table top (rubber)", "pad 'robot/pad1'"
    solref: tuple[float, float]  # (timeconst [s], dampratio [-])
    solimp: tuple[float, float, float, float, float]  # (dmin, dmax, width [m], midpoint, power)
    friction: tuple[float, float, float]  # (sliding [-], torsional [m], rolling [m])
    priority: int = 0  # MuJoCo geom priority: the higher one's parameters win in a contact
    solmix: float = 1.0  # weight of this geom's solref/solimp in a contact of equal priority
    condim: int = 4  # contact dimensionality


def material_surface(mat: Material, label: str) -> Surface:
    """A prop of `mat` as a surface (props have priority 0, solmix 1 and condim 4: `sim.props`)."""
    return Surface(label, tuple(mat.solref), tuple(mat.solimp), tuple(mat.friction))  # type: ignore[arg-type]


def finger_surfaces(model: mujoco.MjModel, finger_bodies) -> list[Surface]:
    """The distinct contact parameters of the colliding geoms on `finger_bodies` (a RobotIndex's),
    labelled by the first geom that has them."""
    bodies = {int(b) for b in finger_bodies}
    out: dict[tuple, Surface] = {}
    for g in range(model.ngeom):
        if int(model.geom_bodyid[g]) not in bodies or not (model.geom_contype[g] or model.geom_conaffinity[g]):
            continue
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom{g}"
        solref, solimp, friction = (tuple(float(x) for x in a[g]) for a in
                                    (model.geom_solref, model.geom_solimp, model.geom_friction))
        surface = Surface(f"finger geom '{name}'", solref, solimp, friction,  # type: ignore[arg-type]
                          int(model.geom_priority[g]), float(model.geom_solmix[g]), int(model.geom_condim[g]))
        out.setdefault((surface.solref, surface.solimp, surface.friction, surface.priority, surface.solmix,
                        surface.condim), surface)
    return list(out.values())


def probe_model(block: Material, surface: Surface, *, edge: float, timestep: float) -> mujoco.MjModel:
    """A cube of edge `edge` [m] and `block`'s material resting on a fixed slab of `surface`."""
    mj = mujoco.MjSpec()
    mj.modelname = "material_pair_probe"
    mj.option.timestep = timestep
    mj.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC  # as sim.scene sets every scene up
    mj.option.impratio = 10.0
    mj.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    mj.worldbody.add_geom(name="surface", type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.1, 0.1, 0.01], pos=[0, 0, -0.01],
                          solref=list(surface.solref), solimp=list(surface.solimp), friction=list(surface.friction),
                          priority=surface.priority, solmix=surface.solmix, condim=surface.condim)
    body = mj.worldbody.add_body(name="block", pos=[0, 0, edge / 2])
    body.add_freejoint()
    body.add_geom(name="block", type=mujoco.mjtGeom.mjGEOM_BOX, size=[edge / 2] * 3, solref=list(block.solref),
                  solimp=list(block.solimp), friction=list(block.friction), density=block.density, condim=4)
    return mj.compile()


def lint_pair(block: Material, surface: Surface, *, edge: float, timestep: float) -> LintReport:
    """The contact linter's report on a `block` cube settling on `surface` (see the module docstring)."""
    if not (np.isfinite(edge) and edge > 0):
        raise SimError(f"edge: {edge!r} must be a positive length [m]")
    return lint_contact_stability(probe_model(block, surface, edge=edge, timestep=timestep), settle_s=PROBE_SETTLE_S)
