"""Contact materials: named presets mapping to MuJoCo solref / solimp / friction, and their checks.

How the presets are derived (MuJoCo's soft-contact model, "Contact parameters" in its docs):

- solref = (timeconst [s], dampratio): the contact behaves like a mass-spring-damper whose
  time constant is `timeconst`. Stiffer materials get a smaller time constant, but MuJoCo can
  only resolve time constants of at least 2 physics steps (1/600 s steps: >= 3.3 ms), so the
  stiffest preset (steel) sits at 4 ms. dampratio 1 is critically damped (no bounce); rubber is
  under-damped (0.6) so it rebounds a little; foam is over-damped (1.5) so it never bounces.
- solimp = (dmin, dmax, width [m], midpoint, power): impedance grows from dmin to dmax over
  `width` of penetration. High dmax (0.99) means little steady-state penetration: hard
  materials. Foam uses a low dmin and a wide 1 cm transition so it visibly squashes.
- friction = (sliding, torsional [m], rolling [m]): sliding coefficients are mid-range dry
  values from engineering tables against steel or rubber pads (steel-steel ~0.5, wood ~0.6,
  ABS-like plastic ~0.4, rubber ~1.2, polyurethane foam ~0.9); torsional and rolling are small
  lengths that stop spinning and rolling on flat contact patches.
- density [kg/m^3] gives each prop its mass from its volume.
"""

from __future__ import annotations

from dataclasses import dataclass

from demoforge.errors import SimError


@dataclass(frozen=True)
class Material:
    """How a geom touches others."""

    name: str  # preset name or a user label
    solref: tuple[float, float]  # (timeconst [s], dampratio [-])
    solimp: tuple[float, float, float, float, float]  # (dmin, dmax, width [m], midpoint, power)
    friction: tuple[float, float, float]  # (sliding [-], torsional [m], rolling [m])
    density: float  # [kg/m^3]


MATERIALS: dict[str, Material] = {
    "steel": Material("steel", (0.004, 1.0), (0.95, 0.99, 0.001, 0.5, 2.0), (0.5, 0.005, 0.0001), 7850.0),
    "wood": Material("wood", (0.005, 1.0), (0.9, 0.97, 0.001, 0.5, 2.0), (0.6, 0.005, 0.0001), 600.0),
    "plastic": Material("plastic", (0.006, 1.0), (0.9, 0.95, 0.001, 0.5, 2.0), (0.4, 0.005, 0.0001), 1050.0),
    "rubber": Material("rubber", (0.01, 0.6), (0.85, 0.95, 0.002, 0.5, 2.0), (1.2, 0.01, 0.0002), 1100.0),
    "foam": Material("foam", (0.03, 1.5), (0.6, 0.9, 0.01, 0.5, 2.0), (0.9, 0.01, 0.0005), 50.0),
}


def material(name_or_material: str | Material) -> Material:
    """A preset by name, or the given Material unchanged."""
    if isinstance(name_or_material, Material):
        return name_or_material
    try:
        return MATERIALS[name_or_material]
    except KeyError:
        raise SimError(
            f"unknown material {name_or_material!r}; presets: {sorted(MATERIALS)}, "
            "or pass a demoforge.sim.Material(...)"
        ) from None


def material_problems(mat: Material, *, timestep: float, where: str) -> list[str]:
    """Every reason `mat` is unusable at `timestep` [s]; empty when it is fine.

    `where` names the field in messages (e.g. "props[2].material")."""
    problems = []
    if len(mat.solref) != 2:
        return [f"{where}.solref must be (timeconst, dampratio), got {mat.solref!r}"]
    if len(mat.solimp) != 5:
        return [f"{where}.solimp must be (dmin, dmax, width, midpoint, power), got {mat.solimp!r}"]
    timeconst, dampratio = mat.solref
    if not timeconst > 0:
        problems.append(f"{where}.solref timeconst must be > 0 [s], got {timeconst}")
    elif timeconst < 2 * timestep:
        problems.append(
            f"{where}.solref timeconst {timeconst} s is below 2 x timestep ({2 * timestep:.6g} s); "
            f"MuJoCo cannot resolve it: use timeconst >= {2 * timestep:.6g} or a smaller timestep"
        )
    if not dampratio > 0:
        problems.append(f"{where}.solref dampratio must be > 0, got {dampratio}")
    dmin, dmax, width = mat.solimp[:3]
    for label, value in (("dmin", dmin), ("dmax", dmax)):
        if not 0 < value < 1:
            problems.append(f"{where}.solimp {label} must be in (0, 1), got {value}")
    if dmin > dmax:
        problems.append(f"{where}.solimp dmin ({dmin}) must be <= dmax ({dmax})")
    if not width > 0:
        problems.append(f"{where}.solimp width must be > 0 [m], got {width}")
    if len(mat.friction) != 3 or any(not f >= 0 for f in mat.friction):
        problems.append(f"{where}.friction must be 3 values >= 0, got {mat.friction!r}")
    if not mat.density > 0:
        problems.append(f"{where}.density must be > 0 [kg/m^3], got {mat.density}")
    return problems
