"""What the stage option records' values are checked against or stored as: the registries they
choose from (families, control modes, motion profiles), read when asked, and the
stored form of a randomization spec and of --material entries."""

from __future__ import annotations

from typing import Any


def family_value(value: str, where: str) -> str:
    """A family some registered task package provides; the error lists them and how to add one."""
    from demoforge.tasks.package import family  # lazy: the task registry, kept off `demoforge --help`

    family(value)
    return value


def mode_choices():
    from demoforge.sim.controllers import MODES  # lazy: the simulator (mujoco), kept off `demoforge --help`

    return MODES


def motion_profile_choices():
    from demoforge.skills import PROFILES  # lazy: the simulator (mujoco), kept off `demoforge --help`

    return tuple(sorted(PROFILES))


def randomization_value(value: Any, where: str) -> dict | None:
    """`randomization` as stored: the spec's enabled fields (a path = a spec file), or None."""
    # lazy: the randomization specs (the simulator), kept off `demoforge --help`
    from demoforge.randomize import load_spec
    from demoforge.randomize.spec import spec_from_dict, spec_to_dict

    if value is False:
        return None
    spec = load_spec(value) if isinstance(value, str) else spec_from_dict(value, where=where)
    return spec_to_dict(spec)


def materials_value(value: Any, where: str) -> tuple[str, ...]:
    """`material` as stored: canonical PROP=MATERIAL entries (sorted; custom materials as sorted JSON)."""
    # lazy: the materials (the simulator), kept off `demoforge --help`
    from demoforge.envs.materials import materials_to_args, parse_material_args

    return materials_to_args(parse_material_args(value, where=where))
