"""The blocks world as a task package: the shipped domain, the seven skills, the eight fluent
predicates and the six families. Registered by `demoforge.tasks.package` before any other, and
declared as the `blocks` entry point of the group `demoforge.tasks` in pyproject.toml."""

from demoforge.skills import flip, pick, place, region, rotate
from demoforge.symbolic.abstract import BLOCKS_PREDICATES
from demoforge.tasks.families import BLOCKS_FAMILIES, DOMAIN
from demoforge.tasks.library import shipped_domain
from demoforge.tasks.package_records import ObjectType, Skill, TaskPackage

SKILLS = (
    Skill("pick-up", ("?x",), pick.pick_up),
    Skill("unstack", ("?x", "?y"), pick.unstack),
    Skill("put-down", ("?x",), place.put_down),
    Skill("stack", ("?x", "?y"), place.stack),
    Skill("flip", ("?x", "?from", "?to"), flip.flip),
    Skill("rotate", ("?x", "?from", "?to"), rotate.rotate),
    Skill("place-in-region", ("?x", "?r"), region.place_in_region),
)

# The object types every scene builder knows today; a package over boxes and table regions reuses them.
OBJECT_TYPES = {
    "block": ObjectType("block", "a free box prop, sized, coloured and marked from the sidecar's `blocks`"),
    "region": ObjectType("region", "a rectangle on the table top (table frame) from the sidecar's `regions`"),
}

PACKAGE = TaskPackage(
    name=DOMAIN,
    domain=shipped_domain("blocks.pddl"),
    skills={s.name: s for s in SKILLS},
    predicates=BLOCKS_PREDICATES,
    families=BLOCKS_FAMILIES,
    object_types=OBJECT_TYPES,
)
