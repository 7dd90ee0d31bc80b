"""The doctor's thresholds, one record with defaults next to the code that reads them."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from demoforge.errors import DemoforgeError


MAX_BINS = 1000  # D007 bins per joint: a 7-joint arm's occupancy grid stays small


@dataclass(frozen=True)
class DoctorConfig:
    """Every threshold a check uses; the CLI maps its options onto these fields."""

    bins: int = 10  # D007: bins per joint across its limits
    min_occupancy: float = 0.7  # D007: a joint whose visited fraction of bins is below this is a finding
    min_bin_frames: int = 1  # D007: frames a bin needs to count as visited
    constant_range: float = 1e-8  # D004: max - min below this is a constant dimension (error)
    near_constant_std: float = 1e-4  # D004: std below this (in the feature's unit) is near-constant (warning)
    idle_tolerance: float = 1e-6  # D005: a step whose largest action change is below this is idle [action unit]
    max_idle_fraction: float = 0.5  # D005: episodes idler than this are a warning
    max_action_speed: float = 3.0  # D008: default bound on |d action / dt| per dimension [unit/s]
    length_mad_z: float = 3.5  # D009: robust z-score (median / MAD) beyond which a length is an outlier
    float32_hazard_s: float = 1000.0  # D002: episodes or video files longer than this risk float32 timestamps [s]
    stats_rtol: float = 1e-3  # D011: relative tolerance of stats.json against recomputed values
    stats_atol: float = 1e-5  # D011: absolute tolerance, same unit as the feature
    decode_video: bool = False  # D006: also decode every episode's frames (slow); default demuxes packets only
    path_rad_per_m: float = 5.0  # D014: joint travel an efficient arm needs per metre of TCP motion [rad/m]
    path_factor: float = 2.0  # D014: an operator run travelling more than this many times its need is flagged
    path_slack: float = 1.0  # D014: ... plus this much, so short runs (a grasp, a settle) are not judged [rad]
    max_per_check: int = 20  # findings listed one by one per check before the rest are summarized

    def __post_init__(self) -> None:
        problems = []
        if not 2 <= self.bins <= MAX_BINS:
            problems.append(f"bins={self.bins} must be in [2, {MAX_BINS}]")
        if not 0.0 < self.min_occupancy <= 1.0:
            problems.append(f"min_occupancy={self.min_occupancy} must be in (0, 1]")
        if not 0.0 < self.max_idle_fraction <= 1.0:
            problems.append(f"max_idle_fraction={self.max_idle_fraction} must be in (0, 1]")
        for name in ("max_action_speed", "length_mad_z", "float32_hazard_s", "max_per_check", "path_rad_per_m",
                     "path_factor"):
            if not (math.isfinite(getattr(self, name)) and getattr(self, name) > 0):  # NaN would switch checks off
                problems.append(f"{name}={getattr(self, name)} must be a finite number > 0")
        for name in ("constant_range", "near_constant_std", "idle_tolerance", "stats_rtol", "stats_atol", "path_slack"):
            if not (math.isfinite(getattr(self, name)) and getattr(self, name) >= 0):
                problems.append(f"{name}={getattr(self, name)} must be a finite number >= 0")
        if problems:
            raise DemoforgeError("doctor config: " + "; ".join(problems))

    @staticmethod
    def from_dict(raw: dict[str, Any]) -> "DoctorConfig":
        known = {f.name for f in fields(DoctorConfig)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise DemoforgeError(f"doctor config: unknown keys {unknown}; valid keys: {sorted(known)}")
        return DoctorConfig(**raw)
