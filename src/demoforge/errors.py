"""One root exception; each subsystem raises a subclass whose message names the
file, field, value and the fix. `listing` lays out the problems of one input, capped."""

from collections.abc import Iterable

MAX_LISTED = 20  # problems spelled out in one message; past it the rest are counted, not printed


def listing(problems: Iterable[object], *, indent: str = "  ", limit: int = MAX_LISTED) -> str:
    """`problems` (strings, or anything str() reads) one per line, each after a newline and `indent`,
    for `f"{what} is invalid:" + listing(problems)`. Repeats are dropped and past `limit` the rest
    are counted ("... and 480 more"): a problem with 500 bad blocks gives a screenful, not a log."""
    lines = list(dict.fromkeys(str(p) for p in problems))
    if len(lines) > limit:
        lines = [*lines[:limit], f"... and {len(lines) - limit} more"]
    return "".join(f"\n{indent}{line}" for line in lines)


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
