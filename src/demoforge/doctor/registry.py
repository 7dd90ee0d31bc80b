"""The doctor's checks: a plain dict from code to check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from demoforge.doctor import episodes, paths, structure, values
from demoforge.doctor.context import Context
from demoforge.doctor.findings import Finding
from demoforge.errors import DemoforgeError


@dataclass(frozen=True)
class Check:
    """One registered check."""

    code: str  # "D001".."D014"
    title: str  # what it looks at, for reports
    run: Callable[[Context], list[Finding]]


CHECKS: dict[str, Check] = {c.code: c for c in (
    Check("D001", "layout and schema", structure.check_layout),
    Check("D002", "timestamps", structure.check_timestamps),
    Check("D003", "NaN or Inf values", values.check_nonfinite),
    Check("D004", "near-constant dimensions", values.check_constant),
    Check("D005", "frozen actions / idle fraction", values.check_idle),
    Check("D006", "video coverage", structure.check_video),
    Check("D007", "joint-limit coverage", episodes.check_joint_coverage),
    Check("D008", "action discontinuities", values.check_action_jumps),
    Check("D009", "episode length outliers", episodes.check_lengths),
    Check("D010", "duplicate episodes", episodes.check_duplicates),
    Check("D011", "stats.json against the data", values.check_stats),
    Check("D012", "constant success flag", values.check_success_flag),
    Check("D013", "control rate / fps against bake.json", structure.check_rates),
    Check("D014", "path efficiency per operator", paths.check_path_efficiency),
)}


class DoctorError(DemoforgeError):
    """Bad doctor input: unknown check code, unreadable robot, bad option."""


class CoverageError(DoctorError):
    """The coverage generator cannot run on this input (features, robot, rate, unreachable goals)."""


def get_check(code: str) -> Check:
    try:
        return CHECKS[code.upper()]
    except KeyError:
        raise DoctorError(f"no doctor check {code!r}; checks are {sorted(CHECKS)}") from None
