"""`demoforge render`: replay a raw dataset's recorded states under looks and write camera videos."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from demoforge.cli.options import stage_command
from demoforge.cli.progress import StepProgress
from demoforge.render.config import RenderConfig
from demoforge.render.stage import render_dataset


@stage_command(RenderConfig)
def render(
    dataset: Path = typer.Argument(..., help="Raw dataset root (state-only, with sim.state)."),
    out: Path = typer.Option(..., "--out", help="New dataset root (must not exist or be empty)."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress (a bar on a terminal, lines with an ETA otherwise)."),
    options: RenderConfig = None,
) -> None:
    """Render camera videos for every episode of DATASET into a new dataset (the source is unchanged).
    Every option but --episodes and --reference-video is also a key of `demoforge run` (its render stage)
    under the same name."""

    with StepProgress("render", "episodes", quiet=quiet) as progress:
        summary = render_dataset(dataset, out, options, progress=progress)
    rate = summary.frames / summary.seconds if summary.seconds > 0 else 0.0
    typer.echo(f"rendered {summary.episodes} episodes, {summary.frames} frames x {len(options.cameras)} cameras "
               f"in {summary.seconds:.1f} s ({rate:.1f} frames/s) -> {summary.root}")
    sys.stdout.flush()
