"""The tasks stage's config: one record whose fields are the options of `demoforge tasks gen`, of
a run's `tasks:` stage and of `demoforge run` (`demoforge.fields`). It lives here, not in
`demoforge.tasks`, because its sidecar materials are read and contact-linted by
`demoforge.scenes.materials`, a layer above the task generator."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from demoforge.errors import DemoforgeError
from demoforge.fields import MAX_PROBLEMS, MAX_SEED, option
from demoforge.scenes.materials import material_arg_problems, materials_to_args, parse_material_args
from demoforge.sim import SceneSpec
from demoforge.tasks import generate_family
from demoforge.tasks.package import family_value, task_packages_option
from demoforge.tasks.scene import SceneParams


def _default(field: str) -> str:
    """A range's help default, read from the sidecar record that applies it."""
    lo, hi = getattr(SceneParams, field)
    return f"[default: {lo:g},{hi:g}]"


def _materials_value(value: Any, where: str) -> tuple[str, ...]:
    """`sidecar_material` as stored: canonical PROP=MATERIAL entries (sorted; custom materials as sorted JSON)."""
    return materials_to_args(parse_material_args(value, where=where))


@dataclass(frozen=True)
class TasksConfig:
    """The tasks stage: a task family's problems and their scene sidecars (`demoforge tasks gen`)."""

    task_packages: tuple[str, ...] = task_packages_option()  # first: the families below may come from one
    family: str = option("stack_three", "Task family of any loaded task package (`demoforge tasks list`).",
                         normalize=family_value)
    problems: int = option(2, "Problems generated.", range=(1, MAX_PROBLEMS), stage_required=True)
    task_seed: int = option(0, "Seed of the task generator; same seed and options give byte-identical files.",
                            range=(0, MAX_SEED), stage_required=True)
    n: int | None = option(None, "Task blocks (tower height for stack_n/unstack) [default: the family's].",
                           kind="int", range=(1, 100))
    distractors: int = option(0, "Extra blocks on the table, not in the goal.", range=(0, 20))
    split: str = option("all", "Look split: all, train or test (disjoint looks for held-out tests).",
                        choices=("all", "train", "test"))
    split_by: str = option("colour", "Look the split keeps disjoint: colour or glyph.", choices=("colour", "glyph"))
    block_size: tuple[float, float] | None = option(None, f"Cube edge range LO,HI [m] {_default('block_size_m')}.",
                                                     kind="pair", metavar="LO,HI")
    table_height_offset: tuple[float, float] | None = option(
        None, f"Table top height offset range LO,HI [m] {_default('table_height_offset_m')}.", kind="pair",
        metavar="LO,HI")
    friction: tuple[float, float] | None = option(None, f"Sliding friction range LO,HI {_default('friction')}.",
                                                   kind="pair", metavar="LO,HI")
    placement_x: tuple | None = option(None, "Start windows along x 'LO,HI[;LO,HI...]' [m].", kind="windows",
                                       metavar="LO,HI[;..]")
    placement_y: tuple | None = option(None, "Start windows along y 'LO,HI[;LO,HI...]' [m].", kind="windows",
                                       metavar="LO,HI[;..]")
    problem_files: tuple[str, ...] = option((), "PDDL problem files (with NAME.scene.json beside each) used instead "
                                                "of generating; repeatable.", flag="--problem-file", stage=False)
    sidecar_material: tuple[str, ...] = option((), "Contact material written into every sidecar, PROP=MATERIAL: "
                                                   "PROP is table or blocks (every block); MATERIAL a preset (steel, "
                                                   "wood, plastic, rubber, foam) or a custom JSON object (README "
                                                   "'Materials'); repeatable.",
                                               metavar="PROP=MATERIAL", normalize=_materials_value)

    def family_options(self) -> dict[str, Any]:
        """`generate_family`'s options (`tasks.FamilyOptions`)."""
        return {"n": self.n, "distractors": self.distractors, "split": self.split, "split_by": self.split_by,
                "block_size_m": self.block_size, "table_height_offset_m": self.table_height_offset,
                "friction": self.friction, "placement_x_m": self.placement_x, "placement_y_m": self.placement_y,
                "materials": tuple(sorted(parse_material_args(self.sidecar_material).items()))}

    def refusals(self) -> list[str]:
        """What tasks gen would refuse that no one field shows (a family's block count, a material)."""
        problems = [f"problem_files (--problem-file): {f!r} is not a file" for f in self.problem_files
                    if not Path(f).is_file()]
        if self.sidecar_material:  # presets and simulability now; which props exist, per problem
            problems += material_arg_problems(parse_material_args(self.sidecar_material),
                                              timestep=SceneSpec().timestep, where="--sidecar-material")
        try:
            generate_family(self.family, count=0, seed=0, **self.family_options())
        except DemoforgeError as exc:
            problems.append(" ".join(str(exc).split("\n")))
        return problems
