"""What a doctor check returns: findings with a code, a severity, evidence and a fix."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("info", "warning", "error")  # in increasing order of gravity


@dataclass(frozen=True)
class Evidence:
    """Where a finding was seen; every field optional."""

    episode: int | None = None  # episode_index
    frame: int | None = None  # frame_index within the episode
    feature: str | None = None  # feature (column) name, e.g. "action"
    values: dict[str, Any] = field(default_factory=dict)  # the numbers that show it (JSON-able)

    def to_json(self) -> dict[str, Any]:
        return {"episode": self.episode, "frame": self.frame, "feature": self.feature, "values": self.values}


@dataclass(frozen=True)
class Finding:
    """One thing the doctor found, with what to do about it."""

    code: str  # check code, e.g. "D003"
    severity: str  # one of SEVERITIES
    message: str  # what is wrong, with the values seen
    evidence: Evidence = field(default_factory=Evidence)
    fix: str = ""  # a concrete action that removes the finding

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"finding {self.code}: severity {self.severity!r} is not one of {list(SEVERITIES)}")

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "message": self.message,
                "evidence": self.evidence.to_json(), "fix": self.fix}

    def __str__(self) -> str:
        where = ", ".join(f"{k} {v}" for k, v in (("episode", self.evidence.episode), ("frame", self.evidence.frame),
                                                   ("feature", self.evidence.feature)) if v is not None)
        return f"[{self.code} {self.severity}] {self.message}" + (f" ({where})" if where else "")


def severity_rank(severity: str) -> int:
    """0 for info, 1 for warning, 2 for error."""
    if severity not in SEVERITIES:
        raise ValueError(f"severity {severity!r} is not one of {list(SEVERITIES)}")
    return SEVERITIES.index(severity)


def jsonable(x: Any) -> Any:
    """numpy scalars and arrays -> plain Python, recursively, for evidence values."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if hasattr(x, "tolist"):
        return jsonable(x.tolist())
    if isinstance(x, float) and x != x:
        return "nan"
    if isinstance(x, float) and x in (float("inf"), float("-inf")):
        return "inf" if x > 0 else "-inf"
    return x
