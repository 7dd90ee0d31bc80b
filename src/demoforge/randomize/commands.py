"""The options of `demoforge randomize check` and `randomize sample`, one record each
(`demoforge.fields`): their flags are generated from these fields."""

from __future__ import annotations

from dataclasses import dataclass

from demoforge.fields import MAX_SEED, option

SET_HELP = "Override one field, VALUE in YAML syntax: --set mass_scale=[0.9,1.1] --set kp_scale=null."
MAX_DRAWS = 100_000  # draws printed by one `randomize sample`


def _overrides():
    return option((), SET_HELP, flag="--set", keyed=True, metavar="FIELD=VALUE")


@dataclass(frozen=True)
class SpecCheckConfig:
    """`demoforge randomize check`: a spec with overrides."""

    overrides: tuple[str, ...] = _overrides()


@dataclass(frozen=True)
class SampleConfig:
    """`demoforge randomize sample`: seeded draws of a spec for the default scene."""

    seed: int = option(0, "Run seed; draw k uses SeedSequence(seed, spawn_key=(k,)).", range=(0, MAX_SEED))
    count: int = option(1, "Number of draws.", range=(1, MAX_DRAWS))
    overrides: tuple[str, ...] = _overrides()
    robot: str | None = option(None, "Robot: a built-in card (panda, ur5e_2f85) or a card YAML [default: panda].",
                               kind="str")
    jsonl: bool = option(False, "One compact JSON draw per line instead of a pretty list.")
