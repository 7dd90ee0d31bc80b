"""`demoforge export openpi|gr00t SRC --out DIR`: a baked dataset in the layout a trainer's own loader reads."""

from __future__ import annotations

from pathlib import Path

import typer

from demoforge.cli.options import stage_command
from demoforge.cli.progress import StepProgress
from demoforge.dataset.guard import holds_files
from demoforge.export.run import TRAINERS, ExportConfig


@stage_command(ExportConfig, exclude=("trainer",))
def export(
    trainer: str = typer.Argument(..., help="openpi or gr00t."),
    source: Path = typer.Argument(..., help="A dataset written by `demoforge bake` (v3.0; read only)."),
    out: Path = typer.Option(..., "--out", help="New folder for the exported dataset."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress (a bar on a terminal, lines with an ETA otherwise)."),
    options: ExportConfig = None,
) -> None:
    """Write SOURCE as LeRobot v2.1 with the trainer's files: openpi's norm_stats.json and training config
    (delta-action mask), or GR00T's modality.json, relative_stats.json and modality config."""
    from demoforge.export import export as run_export

    complete = holds_files(out)  # export moves OUT into place whole: a non-empty OUT it accepts is finished
    with StepProgress("export", "episodes", quiet=quiet) as progress:
        root = run_export(source, out, options, progress=progress)
    if complete:
        typer.echo(f"export: {root} is already complete with these inputs; nothing to do")
        return
    files = {"openpi": ("meta/openpi/norm_stats.json", "meta/openpi/demoforge_config.py"),
             "gr00t": ("meta/modality.json", "meta/relative_stats.json", "meta/demoforge_modality_config.py")}
    written = ", ".join(f for f in files[trainer] if (root / f).is_file())
    typer.echo(f"exported {source} for {trainer} into {root} (LeRobot v2.1; {written}; "
               f"action horizon {options.horizon()}; read by {TRAINERS[trainer].loader})")
