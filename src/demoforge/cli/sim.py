"""`demoforge sim ...` commands."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from demoforge.cli.options import stage_command
from demoforge.sim.lint import LintConfig, LintReport, lint_contact_stability, load_mjcf

app = typer.Typer(no_args_is_help=True, add_completion=False)

EXIT_FINDINGS = 1  # any finding, warning or error: a CI gate should not pass a jittering scene
EXIT_BAD_INPUT = 2  # the scene could not be read or the options are invalid (click uses 2 as well)


@app.callback()
def _group() -> None:
    """Simulation tools."""


@app.command("lint")
@stage_command(LintConfig)
def lint(
    scene: Path = typer.Argument(..., help="MJCF scene file (.xml) to settle and check.", show_default=False),
    options: LintConfig = None,
) -> None:
    """Settle SCENE and report contact-stability findings (C001 explosion, C002 penetration, C003 jitter).

    Exit status: 0 no findings, 1 any finding, 2 the scene or an option is invalid.
    """
    model = load_mjcf(scene)
    keyframe = options.keyframe
    key: str | int | None = int(keyframe) if keyframe is not None and keyframe.isdigit() else keyframe
    report = lint_contact_stability(model, settle_s=options.settle_s, keyframe=key)
    out = Console()
    if options.as_json:
        print(json.dumps(report_json(scene, report), indent=2))
    elif out.is_terminal:
        _print_table(out, scene, report)
    else:
        _print_lines(scene, report)
    if report.findings:
        raise typer.Exit(EXIT_FINDINGS)


def report_json(scene: Path, report: LintReport) -> dict:
    """The report as plain JSON types: what `--json` prints."""
    return {
        "scene": str(scene),
        "settle_s": report.settle_s,
        "keyframe": report.keyframe,
        "timestep": report.trace.timestep,
        "thresholds": dataclasses.asdict(report.thresholds),
        "findings": [dataclasses.asdict(f) | {"geoms": list(f.geoms), "bodies": list(f.bodies)}
                     for f in report.findings],
    }


def _summary(scene: Path, report: LintReport) -> str:
    n = len(report.findings)
    if not n:
        return f"{scene}: no contact-stability findings"
    errors = sum(f.severity == "error" for f in report.findings)
    return f"{scene}: {n} finding{'s' * (n != 1)} ({errors} error{'s' * (errors != 1)}, {n - errors} warning{'s' * (n - errors != 1)})"


def _print_lines(scene: Path, report: LintReport) -> None:
    for f in report.findings:
        print(f"{f.code} {f.severity} [{', '.join(f.geoms)}] {f.message} "
              f"(value {f.value:.4g} {f.unit}, threshold {f.threshold:.4g} {f.unit}); fix: {f.fix}")
    print(_summary(scene, report))


def _print_table(out: Console, scene: Path, report: LintReport) -> None:
    if report.findings:
        table = Table(show_lines=True)
        for column in ("code", "severity", "geoms / bodies", "value (threshold)", "finding", "fix"):
            table.add_column(column)
        for f in report.findings:
            style = "red" if f.severity == "error" else "yellow"
            cells = ("\n".join((", ".join(f.geoms), ", ".join(f.bodies))),
                     f"{f.value:.4g} ({f.threshold:.4g}) {f.unit}", f.message, f.fix)
            table.add_row(Text(f.code, style=style), f.severity, *(Text(c) for c in cells))
        out.print(table)
    out.print(_summary(scene, report), markup=False, highlight=False, soft_wrap=True)

