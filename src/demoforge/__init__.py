"""demoforge: a simulation data factory for robot learning."""

from demoforge.errors import DemoforgeError

__version__ = "0.1.0"
__all__ = ["DemoforgeError", "__version__"]
