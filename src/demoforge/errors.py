"""One root exception; each subsystem raises a subclass whose message names the
file, field, value and the fix."""


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
