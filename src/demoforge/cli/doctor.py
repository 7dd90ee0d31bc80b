"""`demoforge doctor` and `demoforge coverage`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from demoforge.cli.options import stage_command
from demoforge.cli.progress import StepProgress
from demoforge.doctor import DoctorConfig, run_doctor, write_report
from demoforge.doctor.coverage import CoverageConfig
from demoforge.doctor.report import coverage_plot
from demoforge.dataset.guard import guard_output_dir, guard_output_file, write_file


@stage_command(DoctorConfig)
def doctor(
    dataset: Path = typer.Argument(..., help="LeRobot v3 dataset root."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write every finding as JSON to this file."),
    report: Optional[Path] = typer.Option(None, "--report", help="Write a report with plots: FILE.html or FILE.md."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress (a bar on a terminal, lines with an ETA otherwise)."),
    options: DoctorConfig = None,
) -> None:
    """Diagnose a dataset: checks D001-D014, each finding with evidence and a fix. Every option is also
    a key of `demoforge run` (its doctor stage) under the same name."""
    fail_on = options.fail_on or "error"
    if not dataset.is_dir():
        typer.echo(f"error: {dataset}: no such folder; pass a LeRobot v3 dataset root", err=True)
        raise typer.Exit(2)
    if json_out is not None:
        guard_output_file(json_out, [dataset], what="--json")
    if report is not None:
        guard_output_file(report, [dataset], what="--report", suffixes=(".html", ".md"))
    with StepProgress("doctor", "episodes", quiet=quiet) as progress:
        result = run_doctor(dataset, robot=options.robot, config=options, checks=options.checks,
                            progress=progress)
    if json_out is not None:
        write_file(json_out, json.dumps(result.to_json(), indent=1) + "\n")
    if report is not None:
        write_report(result, report)
    for f in result.findings:
        typer.echo(str(f))
        typer.echo(f"    fix: {f.fix}")
    n = {s: result.count(severity=s) for s in ("error", "warning", "info")}
    typer.echo(f"{dataset}: {n['error']} errors, {n['warning']} warnings, {n['info']} notes "
               f"from {len(result.checks)} checks")
    if result.failed(fail_on):
        raise typer.Exit(1)


@stage_command(CoverageConfig)
def coverage(
    input_root: Path = typer.Argument(..., help="Dataset whose joint-limit holes to fill (only read)."),
    output_root: Path = typer.Argument(..., help="New dataset root for the coverage episodes alone (they perform no "
                                       "task); train on it beside INPUT."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the coverage report as JSON."),
    report_out: Optional[Path] = typer.Option(None, "--report", help="Doctor report of OUTPUT with a before/after "
                                              "occupancy plot: FILE.html or FILE.md."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress (a bar on a terminal, lines with an ETA otherwise)."),
    options: CoverageConfig = None,
) -> None:
    """Generate episodes into the joint-limit bins the dataset never visits, as a separate dataset; judge
    the input with them against D007."""
    from demoforge.doctor.coverage import generate_coverage, is_coverage

    # a finished run's OUTPUT is let through: the rerun returns its report (if the same run) or is refused
    guard_output_dir(output_root, [input_root], what="OUTPUT_ROOT", resumable=is_coverage)
    for path, what in ((json_out, "--json"), (report_out, "--report")):
        if path is not None:
            guard_output_file(path, [input_root, output_root], what=what)
    with StepProgress("coverage", "episodes", quiet=quiet) as progress:
        report = generate_coverage(input_root, output_root, config=options, progress=progress)
    if report_out is not None:
        write_report(run_doctor(output_root, robot=options.robot, config=options.judge()), report_out,
                     extra_plots=[coverage_plot(report)])
    if json_out is not None:
        write_file(json_out, json.dumps(report.to_json(), indent=1) + "\n")
    typer.echo("occupancy of the input -> of the input with the coverage episodes:")
    for name, a, b in zip(report.joints, report.occupancy_before, report.occupancy_after):
        typer.echo(f"{name:>16s}  occupancy {a:5.0%} -> {b:5.0%}")
    modes = {m: sum(p.mode == m for p in report.planned) for m in ("bin", "widened", "free")}
    typer.echo(f"{output_root}: {len(report.planned)} coverage episodes, a dataset of their own "
               f"({report.kind}; {modes['bin']} in the target bin, {modes['widened']} widened, {modes['free']} "
               f"free); min occupancy {report.occupancy_before.min():.0%} -> {report.occupancy_after.min():.0%}; "
               f"D007 findings {report.d007_before} -> {report.d007_after} (warnings {report.warnings_before} -> "
               f"{report.warnings_after})")
    for note in report.notes:
        typer.echo(f"note: {note}")
