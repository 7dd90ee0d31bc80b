"""`demoforge render`: replay a raw dataset's recorded states under looks and write camera videos."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from demoforge.cli.options import stage_command
from demoforge.cli.policy import parse_episodes
from demoforge.cli.progress import StepProgress
from demoforge.pipeline.options import RenderOptions


@stage_command(RenderOptions)
def render(
    dataset: Path = typer.Argument(..., help="Raw dataset root (state-only, with sim.state)."),
    out: Path = typer.Option(..., "--out", help="New dataset root (must not exist or be empty)."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress (a bar on a terminal, lines with an ETA otherwise)."),
    options: RenderOptions = None,
) -> None:
    """Render camera videos for every episode of DATASET into a new dataset (the source is unchanged).
    Every option but --episodes is also a key of `demoforge run` (its render stage) under the same name."""
    # lazy: the simulator (mujoco), kept off `demoforge --help`
    from demoforge.execute import resolve_workers
    from demoforge.render.stage import render_dataset

    chosen = parse_episodes(options.episodes)
    config = options.render_config(None if chosen is None else tuple(chosen))
    with StepProgress("render", "episodes", quiet=quiet) as progress:
        summary = render_dataset(dataset, out, config, workers=resolve_workers(options.workers, _episodes(dataset)),
                                 progress=progress)
    rate = summary.frames / summary.seconds if summary.seconds > 0 else 0.0
    typer.echo(f"rendered {summary.episodes} episodes, {summary.frames} frames x {len(config.cameras)} cameras "
               f"in {summary.seconds:.1f} s ({rate:.1f} frames/s) -> {summary.root}")
    sys.stdout.flush()


def _episodes(dataset: Path) -> int:
    """The source's episode count (what 'auto' workers are capped by); 1 when it cannot be read
    (render_dataset then says why)."""
    import json

    try:
        return max(1, int(json.loads((dataset / "meta" / "info.json").read_text())["total_episodes"]))
    except (OSError, ValueError, KeyError, TypeError):
        return 1
