"""What every check reads: the dataset's metadata, the structural problems and the streaming scan."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from demoforge.convert.stamp import BakeStamp
from demoforge.dataset.problem import Problem
from demoforge.dataset.layout import DatasetInfo
from demoforge.doctor.config import DoctorConfig
from demoforge.doctor.findings import Evidence, Finding
from demoforge.doctor.scan import Scan


@dataclass(frozen=True)
class Context:
    """One dataset as the checks see it; fields are None where the dataset is too broken to read them."""

    root: Path
    config: DoctorConfig
    problems: tuple[Problem, ...]  # demoforge.dataset.check_dataset's structural problems
    info: DatasetInfo | None
    episodes: pa.Table | None  # meta/episodes, sorted by episode_index
    scan: Scan | None
    stats: dict[str, Any] | None  # meta/stats.json
    bake: BakeStamp | None  # meta/bake.json
    provenance: dict[str, Any] | None = None  # meta/demoforge/provenance.json
    stats_exact: dict[str, Any] | None = None  # meta/stats.exact.json, where stats.json is floored (bake --std-floor)
    limits_note: str = ""  # why there are no joint limits, when there are none


def capped(findings: list[Finding], cfg: DoctorConfig, code: str, what: str) -> list[Finding]:
    """The first cfg.max_per_check findings, then one line counting the rest (same worst severity)."""
    if len(findings) <= cfg.max_per_check:
        return findings
    rest = findings[cfg.max_per_check:]
    worst = max((f.severity for f in rest), key=("info", "warning", "error").index)
    episodes = sorted({f.evidence.episode for f in rest if f.evidence.episode is not None})
    return findings[:cfg.max_per_check] + [Finding(
        code, worst, f"{len(rest)} more {what} not listed one by one",
        Evidence(values={"episodes": episodes[:200]}), rest[0].fix)]
