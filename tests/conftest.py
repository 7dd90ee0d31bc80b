import os

# Offscreen rendering must be chosen before mujoco is imported anywhere.
os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("SVT_LOG", "1")

LONG_MARKERS = ("closed_loop", "slow", "conformance")


def pytest_collection_modifyitems(config, items):
    """Long tests first (closed-loop, then slow, then conformance; each in collection order).

    `make test` runs the suite on every core (pytest-xdist, work stealing): started first, the
    minute-long tests run beside the short ones instead of leaving one core busy at the end."""
    def rank(item) -> int:
        return next((k for k, m in enumerate(LONG_MARKERS) if item.get_closest_marker(m)), len(LONG_MARKERS))

    items.sort(key=rank)  # stable: the same order in every worker, as xdist requires
