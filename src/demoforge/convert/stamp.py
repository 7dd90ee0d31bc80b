"""meta/bake.json, the stamp `demoforge bake` writes: its path and its one reader.

What the baked labels mean lives there (convention, control rate, the native rate it was
sampled from, the control law, the environment state's kind and names, the sources), and every
reader (the doctor, coverage, `--like`, the lerobot plugin, the exports) goes through
`read_stamp`, so a missing or damaged stamp is refused the same way everywhere, naming the
file and the fix.

    stamp = read_stamp(root)            # BakeStamp, or DemoforgeError naming the file
    stamp = read_stamp(root, required=False)  # None when the dataset has no stamp (not baked)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from demoforge.errors import DemoforgeError

BAKE_PATH = "meta/bake.json"


@dataclass(frozen=True)
class BakeStamp:
    """The fields of meta/bake.json that readers act on; `raw` is the whole record."""

    path: Path
    convention: str
    control_freq: int  # [Hz] the baked rows' rate
    native_freq: int  # [Hz] the rate they were sampled from
    control_law: dict | None  # the arm's control law of the sources (None: not recorded)
    environment_state: dict | None  # {"kind", "names", ...} when bake wrote observation.environment_state
    raw: dict[str, Any]

    @property
    def environment_state_kind(self) -> str | None:
        """The kind of observation.environment_state (`demoforge.raw.envstate.KINDS`; a stamp from
        before kinds holds object poses), or None when the dataset holds none."""
        es = self.environment_state
        return None if es is None else str(es.get("kind", "objects"))

    @property
    def stats_floor(self) -> dict:
        """bake.json's `stats` record where `bake --std-floor` floored stats.json ({"std_floor",
        "exact", "floored": {feature: dims}}); empty where the statistics are exact."""
        return self.raw.get("stats") or {}


def read_stamp(root: str | Path, *, required: bool = True, why: str = "") -> BakeStamp | None:
    """The bake stamp of the dataset at `root`; None when it has none and not `required`.
    `why`: what needs it, for the message (e.g. "--like")."""
    path = Path(root) / BAKE_PATH
    if not path.is_file():
        if not required:
            return None
        raise DemoforgeError(f"{root}: no {BAKE_PATH}; {why or 'this'} needs a dataset made by `demoforge bake`")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return BakeStamp(path, str(raw["convention"]), int(raw["control_freq"]), int(raw["native_freq"]),
                         raw.get("control_law"), raw.get("environment_state"), raw)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DemoforgeError(f"{path}: cannot read the bake stamp ({type(exc).__name__}: {exc}); re-bake the "
                             "dataset") from None
