"""The doctor stage's config: what fails the run, which checks run, and every threshold a check
uses, one record whose fields are also the options of `demoforge doctor` and of the run config's
`doctor:` mapping (`demoforge.fields`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from demoforge.errors import DemoforgeError
from demoforge.fields import option, record_problems

MAX_BINS = 1000  # D007 bins per joint: a 7-joint arm's occupancy grid stays small


def _check_codes(value: tuple[str, ...], where: str) -> tuple[str, ...]:
    from demoforge.doctor.registry import CHECKS  # lazy: the registry imports the checks, which read this record

    bad = [c for c in value if c.upper() not in CHECKS]
    if bad:
        raise DemoforgeError(f"{bad} are not doctor checks; checks: {', '.join(sorted(CHECKS))}")
    return value


@dataclass(frozen=True)
class DoctorConfig:
    """What the doctor runs and every threshold a check uses (`demoforge doctor`, run's doctor stage)."""

    fail_on: str | None = option("error", "warning or error: exit 1 on findings at least this grave; run: none = "
                                          "never.", kind="str", choices=("warning", "error"), run_default=None,
                                 optional=True)
    checks: tuple[str, ...] | None = option(None, "Codes to run, comma-separated [default: all].", kind="list",
                                            normalize=_check_codes)
    # `demoforge run` gives its doctor the run's robot (a card file), so this one is the command's alone
    robot: str | None = option(None, "Joint limits for D007: a built-in card (panda), a card YAML, or an MJCF/URDF "
                                     "file [default: the dataset's robot_type or state names].", kind="str", run=False)
    bins: int = option(10, "D007: bins per joint across its limits.", range=(2, MAX_BINS))
    min_occupancy: float = option(0.7, "D007: a joint whose visited fraction of bins is below this is a finding.",
                                  range=(0.0, 1.0), low_open=True)
    min_bin_frames: int = option(1, "D007: frames a bin needs to count as visited.", range=(1, None))
    constant_range: float = option(1e-8, "D004: max - min below this is a constant dimension (error) [the "
                                         "feature's unit].", range=(0.0, None))
    # 2e-3: unstack's resting blocks' quaternion components (stds 5e-6 to 2e-3) sank its trained policies
    # until their std was floored at 0.01 (BENCHMARKS, twentieth round); at 1e-4 half of them went unreported
    near_constant_std: float = option(2e-3, "D004: std below this is a near-constant dimension (warning) [the "
                                            "feature's unit].", range=(0.0, None))
    idle_tolerance: float = option(1e-6, "D005: a step whose largest action change is below this is idle [action "
                                         "unit].", range=(0.0, None))
    max_idle_fraction: float = option(0.5, "D005: episodes idler than this fraction of steps are a warning.",
                                      range=(0.0, 1.0), low_open=True)
    max_action_speed: float = option(3.0, "D008: bound on |d action/dt| per dimension [unit/s].", range=(0.0, 1e6),
                                     low_open=True)
    length_mad_z: float = option(3.5, "D009: robust z-score (median / MAD) beyond which an episode length is an "
                                      "outlier.", range=(0.0, None), low_open=True)
    float32_hazard_s: float = option(1000.0, "D002: episodes or video files longer than this risk float32 "
                                             "timestamps [s].", range=(0.0, None), low_open=True)
    stats_rtol: float = option(1e-3, "D011: relative tolerance of stats.json against recomputed values.",
                               range=(0.0, None))
    stats_atol: float = option(1e-5, "D011: absolute tolerance of stats.json [the feature's unit].",
                               range=(0.0, None))
    decode_video: bool = option(False, "D006: decode every frame, not only demux (slow).")
    path_rad_per_m: float = option(5.0, "D014: joint travel an efficient arm needs per metre of TCP motion "
                                        "[rad/m].", range=(0.0, None), low_open=True)
    path_factor: float = option(2.0, "D014: an operator run travelling more than this many times its need is "
                                     "flagged.", range=(0.0, None), low_open=True)
    path_slack: float = option(1.0, "D014: ... plus this much, so short runs (a grasp, a settle) are not judged "
                                    "[rad].", range=(0.0, None))
    max_per_check: int = option(20, "Findings listed one by one per check before the rest are summarized.",
                                range=(1, None))

    def __post_init__(self) -> None:
        problems = record_problems(self)  # a library caller's values get the options' checks (NaN switches checks off)
        if problems:
            raise DemoforgeError("doctor config: " + "; ".join(problems))

    @staticmethod
    def from_dict(raw: dict[str, Any]) -> "DoctorConfig":
        known = {f.name for f in fields(DoctorConfig)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise DemoforgeError(f"doctor config: unknown keys {unknown}; valid keys: {sorted(known)}")
        return DoctorConfig(**raw)
