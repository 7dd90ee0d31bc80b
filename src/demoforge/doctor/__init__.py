"""Dataset doctor: a registry of checks (D001-D014) with evidence and fixes, reports, and the
coverage generator that writes episodes into the joint-limit holes the doctor finds, as a
dataset of their own.

    from demoforge.doctor import run_doctor, write_report
    result = run_doctor("out/dataset", robot="panda")
    result.failed("error"), [str(f) for f in result.findings]
    write_report(result, "doctor.html")

    from demoforge.doctor import generate_coverage
    report = generate_coverage("data/corridor", "data/coverage", robot="panda")
    report.occupancy_before, report.occupancy_after, report.d007_before, report.d007_after
"""

from demoforge.doctor.config import DoctorConfig
from demoforge.doctor.findings import SEVERITIES, Evidence, Finding
from demoforge.doctor.limits import JointLimits, resolve_limits
from demoforge.doctor.registry import CHECKS, Check, CoverageError, DoctorError, get_check
from demoforge.doctor.report import write_report
from demoforge.doctor.run import DoctorResult, run_doctor

__all__ = [
    "CHECKS", "SEVERITIES", "Check", "CoverageConfig", "CoverageError", "CoverageReport", "DoctorConfig",
    "DoctorError", "DoctorResult", "Evidence", "Finding", "JointLimits", "generate_coverage", "get_check",
    "resolve_limits", "run_doctor", "write_report",
]


def __getattr__(name):
    if name in ("CoverageConfig", "CoverageReport", "generate_coverage"):
        # lazy: the coverage generator pulls in the simulator; the doctor reads a real-robot log without one
        from demoforge.doctor import coverage

        return getattr(coverage, name)
    raise AttributeError(f"module 'demoforge.doctor' has no attribute {name!r}")
