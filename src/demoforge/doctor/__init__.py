"""Dataset doctor: a registry of checks (D001-D013) with evidence and fixes, reports, and the
coverage generator that fills the joint-limit holes the doctor finds.

    from demoforge.doctor import run_doctor, write_report
    result = run_doctor("out/dataset", robot="panda")
    result.failed("error"), [str(f) for f in result.findings]
    write_report(result, "doctor.html")
"""

from demoforge.doctor.config import DoctorConfig
from demoforge.doctor.findings import SEVERITIES, Evidence, Finding
from demoforge.doctor.limits import JointLimits, resolve_limits
from demoforge.doctor.registry import CHECKS, Check, DoctorError, get_check
from demoforge.doctor.run import DoctorResult, run_doctor

__all__ = [
    "CHECKS", "SEVERITIES", "Check", "DoctorConfig", "DoctorError", "DoctorResult", "Evidence", "Finding",
    "JointLimits", "get_check", "resolve_limits", "run_doctor", "write_report",
]


def write_report(result, path, **kwargs):
    """Write an HTML or Markdown report (by suffix); see demoforge.doctor.report."""
    from demoforge.doctor.report import write_report as _write

    return _write(result, path, **kwargs)
