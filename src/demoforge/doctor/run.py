"""Run the doctor on one dataset root: structural check, one streaming scan, then every check."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa

from demoforge.convert.stamp import BakeStamp, read_stamp
from demoforge.dataset.check import check_dataset, v21_info
from demoforge.dataset.layout import STATS_EXACT_PATH, STATS_PATH, DatasetInfo, read_info
from demoforge.dataset.reader import read_episodes_table
from demoforge.doctor.config import DoctorConfig
from demoforge.doctor.context import Context
from demoforge.doctor.findings import Evidence, Finding, jsonable, severity_rank
from demoforge.doctor.limits import resolve_limits
from demoforge.doctor.registry import CHECKS, get_check
from demoforge.doctor.scan import Scan, scan_dataset
from demoforge.errors import DemoforgeError
from demoforge.stage.protocol import Progress

PROVENANCE_PATH = "meta/demoforge/provenance.json"  # written by demoforge.execute.generate


@dataclass(frozen=True)
class DoctorResult:
    """Findings on one dataset and what the report plots."""

    root: Path
    findings: tuple[Finding, ...]  # in check order
    checks: tuple[str, ...]  # codes that ran
    scan: Scan | None  # None when the dataset could not be read
    config: DoctorConfig = field(default_factory=DoctorConfig)

    def count(self, code: str | None = None, severity: str | None = None) -> int:
        return sum(1 for f in self.findings if (code is None or f.code == code)
                   and (severity is None or f.severity == severity))

    def worst(self) -> str | None:
        """The gravest severity found, or None without findings."""
        return max((f.severity for f in self.findings), key=severity_rank, default=None)

    def failed(self, fail_on: str) -> bool:
        """True when a finding is at least as grave as `fail_on` ("warning" or "error")."""
        rank = severity_rank(fail_on)
        return any(severity_rank(f.severity) >= rank for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        scan = self.scan
        out: dict[str, Any] = {
            "root": str(self.root), "checks": list(self.checks),
            "counts": {c: self.count(c) for c in self.checks},
            "severities": {s: self.count(severity=s) for s in ("error", "warning", "info")},
            "findings": [f.to_json() for f in self.findings],
        }
        if scan is not None:
            out["episodes"] = len(scan.episodes)
            out["frames"] = sum(s.length for s in scan.episodes)
            if scan.limits is not None:
                out["joint_limits"] = {"source": scan.limits.source, "names": list(scan.limits.names),
                                       "state_names": list(scan.limits.state_names),
                                       "dims": list(scan.limits.dims), "lower": list(scan.limits.lower), "upper": list(scan.limits.upper),
                                       "occupancy_counts": scan.occupancy.tolist()}
        return jsonable(out)


def _read_json(path: Path, problems: list[Finding], code: str) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        problems.append(Finding(code, "error", f"{path.name}: invalid JSON ({exc})", Evidence(),
                                f"rewrite {path.name}"))
        return None


def _read_stamp(root: Path, problems: list[Finding]) -> BakeStamp | None:
    """meta/bake.json through its one reader; a damaged one is a D013 finding, not a stop."""
    try:
        return read_stamp(root, required=False)
    except DemoforgeError as exc:
        problems.append(Finding("D013", "error", str(exc), Evidence(), "re-bake the dataset"))
        return None


def build_context(root: str | Path, *, robot: str | None = None, config: DoctorConfig | None = None,
                  structure: bool = True, progress: Progress | None = None,
                  ) -> tuple[Context, list[Finding]]:
    """Read metadata, run the structural check and the scan. Returns the context and findings met on the way.

    `structure=False` skips check_dataset (D001/D006 then see no problems): the coverage loop uses it.
    `progress` follows the scan (see `scan_dataset`).
    """
    root = Path(root)
    cfg = config or DoctorConfig()
    early: list[Finding] = []
    problems = tuple(check_dataset(root)) if structure else ()
    info: DatasetInfo | None = None
    episodes: pa.Table | None = None
    try:
        info = read_info(root)
        episodes = read_episodes_table(root)
    except (DemoforgeError, OSError, pa.ArrowException):
        if v21_info(root) is not None and not problems:
            early.append(Finding(
                "D001", "info", "a LeRobot v2.1 dataset: its layout was checked as v2.1 and is sound; the other "
                "checks read the v3.0 layout", Evidence(values={"codebase_version": "v2.1"}),
                "run the doctor on the v3.0 bake of the same source (`demoforge bake ... --lerobot-format v3.0`)"))
        # otherwise check_dataset reported why; only D001 can say anything
    if info is None or episodes is None or any(c not in episodes.column_names for c in
                                               ("length", "data/chunk_index", "data/file_index")):
        ctx = Context(root, cfg, problems, info, None, None, None, None)
        return ctx, early
    limits, note = None, ""
    try:
        limits = resolve_limits(info, robot)
        if limits is None:
            note = "the dataset names no robot (robot_type and state names match no built-in card)"
    except DemoforgeError as exc:
        if robot is not None:
            raise
        note = str(exc)
    scan = scan_dataset(root, info, episodes, cfg, limits, progress=progress)
    stats = _read_json(root / STATS_PATH, early, "D011")
    bake = _read_stamp(root, early)
    provenance = _read_json(root / PROVENANCE_PATH, early, "D013")
    exact = _read_json(root / STATS_EXACT_PATH, early, "D011")
    ctx = Context(root, cfg, problems, info, episodes, scan, stats, bake, provenance=provenance, limits_note=note,
                  stats_exact=exact)
    return ctx, early


def run_doctor(root: str | Path, *, robot: str | None = None, config: DoctorConfig | None = None,
               checks: Sequence[str] | None = None, structure: bool = True,
               progress: Progress | None = None) -> DoctorResult:
    """Every registered check (or those in `checks`) on the dataset at `root`.

    `robot` is a built-in card name, a card YAML or an MJCF/URDF file giving the joint limits
    for D007; without it they come from the dataset's robot_type or state names.
    `progress` takes a "doctor" `ProgressEvent` as the scan summarizes each episode.
    """
    codes = [get_check(c).code for c in checks] if checks is not None else list(CHECKS)
    ctx, early = build_context(root, robot=robot, config=config, structure=structure, progress=progress)
    findings = [f for f in early if f.code in codes]
    for code in codes:
        findings += CHECKS[code].run(ctx)
    return DoctorResult(Path(root), tuple(findings), tuple(codes), ctx.scan, ctx.config)
