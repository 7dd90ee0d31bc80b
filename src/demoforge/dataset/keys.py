"""LeRobot's feature names and demoforge's per-episode extra columns, defined once.

Feature names follow lerobot's conventions (`observation.state`, `action`,
`observation.images.<camera>`, `observation.environment_state`). demoforge's
per-episode records live in the episodes parquet as extra columns `demoforge/<name>`
holding JSON (`extra_column`); per-camera pixel histograms as `demoforge/pixel_histogram/
<video key>` holding (3, 256) counts. `episode_extras(row)` and `row_extra(row, name)` are
the one way to read them back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

STATE = "observation.state"  # proprioception, e.g. [arm q [rad], gripper closedness]
ACTION = "action"  # what the policy commands
ENVIRONMENT_STATE = "observation.environment_state"  # object poses and other world state
OBSERVATION_PREFIX = "observation."  # every observation feature's prefix
IMAGES_PREFIX = "observation.images."  # + camera name, e.g. observation.images.front

EXTRA_PREFIX = "demoforge/"  # per-episode JSON records: demoforge/<name>
HISTOGRAM_PREFIX = EXTRA_PREFIX + "pixel_histogram/"  # + video key: per-episode (3, 256) pixel counts


def image_key(camera: str) -> str:
    """'front' -> 'observation.images.front'."""
    return IMAGES_PREFIX + camera


def camera_of(key: str) -> str:
    """'observation.images.front' -> 'front'."""
    return key.removeprefix(IMAGES_PREFIX)


def extra_column(name: str) -> str:
    """The episodes-parquet column of per-episode record `name`: 'demoforge/<name>'."""
    return EXTRA_PREFIX + name


def is_extra_column(column: str) -> bool:
    """True for a JSON record column (`demoforge/<name>`), False for histograms and the rest."""
    return column.startswith(EXTRA_PREFIX) and not column.startswith(HISTOGRAM_PREFIX)


def decode_extra(value: Any) -> Any:
    """One extra cell as stored (a JSON string, or already decoded) -> its value."""
    return json.loads(value) if isinstance(value, str) else value


def row_extra(row: Mapping[str, Any], name: str, default: Any = None) -> Any:
    """Record `name` of an episode row, decoded; `default` when the column is absent or holds null."""
    value = decode_extra(row.get(EXTRA_PREFIX + name))
    return default if value is None else value


def episode_extras(row: Mapping[str, Any]) -> dict[str, Any]:
    """Every per-episode record of an episode row, decoded, by name (sorted; null cells left out)."""
    return {column[len(EXTRA_PREFIX):]: decode_extra(value) for column, value in sorted(row.items())
            if is_extra_column(column) and value is not None}
