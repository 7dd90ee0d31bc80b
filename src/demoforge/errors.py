"""One root exception; each subsystem raises a subclass whose message names the
file, field, value and the fix. `listing` lays out the problems of one input, capped; `got`
says what a YAML or JSON reader gave for a value of the wrong type."""

import math
from collections.abc import Iterable


class DemoforgeError(Exception):
    """Root of every error demoforge raises on purpose."""


class DatasetError(DemoforgeError):
    """A dataset on disk, or data given to the writer, is not what it must be."""


class DatasetLockedError(DatasetError):
    """Another writer holds the dataset root."""


class EmptyDatasetError(DatasetError):
    """A writer was finalized without episodes: there is no dataset to write."""


class SimError(DemoforgeError):
    """A robot card, scene, material or simulator setting is invalid."""


class TaskError(DemoforgeError):
    """A PDDL domain or problem, or a task family option, is invalid."""


class PlanningError(DemoforgeError):
    """A planner failed for a reason other than the problem being unsolvable."""


MAX_LISTED = 20  # problems spelled out in one message; past it the rest are counted, not printed


def listing(problems: Iterable[object], *, indent: str = "  ", limit: int = MAX_LISTED) -> str:
    """`problems` (strings, or anything str() reads) one per line, each after a newline and `indent`,
    for `f"{what} is invalid:" + listing(problems)`. Repeats are dropped and past `limit` the rest
    are counted ("... and 480 more"): a problem with 500 bad blocks gives a screenful, not a log."""
    lines = list(dict.fromkeys(str(p) for p in problems))
    if len(lines) > limit:
        lines = [*lines[:limit], f"... and {len(lines) - limit} more"]
    return "".join(f"\n{indent}{line}" for line in lines)


def got(value: object) -> str:
    """`value` by its type, for "must be a number, got ..." messages: "the string '1e300' (YAML
    reads 1e300 as text; write 1.0e+300)", "a list [1, 2]", "the boolean true". PyYAML reads a
    number without a dot or without the exponent's sign as a string, the usual surprise."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string {value!r}" + _number_hint(value)
    if isinstance(value, list | tuple):
        return f"a list {list(value)!r}"
    if isinstance(value, dict):
        return f"a mapping {value!r}"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    return f"a {type(value).__name__} {value!r}"


def _number_hint(text: str) -> str:
    """How to write a number that a YAML reader kept as text, if `text` is one."""
    try:
        x = float(text.strip())
    except ValueError:
        return ""
    if not math.isfinite(x):
        return ""
    if "e" not in text.lower():  # plain digits are a number to YAML unless quoted
        return " (a number in quotes is text to YAML; drop the quotes)"
    if x.is_integer() and abs(x) < 1e15:  # as digits, which also suits an integer field
        return f" (YAML reads {text} as text; write {int(x)})"
    mantissa, e, exponent = repr(x).partition("e")  # repr: a signed exponent; YAML 1.1 also needs the dot
    return f" (YAML reads {text} as text; write {mantissa + ('' if '.' in mantissa else '.0') + e + exponent})"
