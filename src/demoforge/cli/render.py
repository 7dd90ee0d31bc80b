"""`demoforge render`: replay a raw dataset's recorded states under looks and write camera videos."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from demoforge.errors import DemoforgeError
from demoforge.cli.failures import fail
from demoforge.cli.ranges import MAX_SEED, MAX_WORKERS


def _split(values: list[str]) -> tuple[str, ...]:
    return tuple(v for item in values for v in item.split(",") if v)


def render(
    dataset: Path = typer.Argument(..., help="Raw dataset root (state-only, with sim.state)."),
    look: list[str] = typer.Option(..., "--look", help="Look YAML file or shipped look name (plain, randomized), "
                                   "with ':N' for N copies per episode; repeat for several looks."),
    cameras: list[str] = typer.Option(["front", "wrist"], "--cameras", "--camera",
                                      help="Camera names; repeat or give a comma list (front,wrist)."),
    depth: bool = typer.Option(False, "--depth", help="Also write <camera>_depth videos (metres as 12-bit lossless codes)."),
    segmentation: bool = typer.Option(False, "--segmentation", help="Also write <camera>_segmentation videos."),
    out: Path = typer.Option(..., "--out", help="New dataset root (must not exist or be empty)."),
    workers: int = typer.Option(1, "--workers", min=1, max=MAX_WORKERS,
                                help="Processes; the output does not depend on it."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED, help="Root seed of the look draws."),
    episodes: str | None = typer.Option(None, "--episodes", help="Source episodes to render, e.g. 0,2,5-7 (all)."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress (a bar on a terminal, lines with an ETA otherwise)."),
) -> None:
    """Render camera videos for every episode of DATASET into a new dataset (the source is unchanged)."""
    from demoforge.cli.policy import parse_episodes
    from demoforge.cli.progress import StepProgress
    from demoforge.render.stage import RenderConfig, parse_look_arg, render_dataset

    chosen = parse_episodes(episodes)
    try:
        config = RenderConfig(looks=tuple(parse_look_arg(item) for item in look), cameras=_split(cameras),
                              depth=depth, segmentation=segmentation, seed=seed,
                              episodes=None if chosen is None else tuple(chosen))
        with StepProgress("render", "episodes", quiet=quiet) as progress:
            summary = render_dataset(dataset, out, config, workers=workers, progress=progress.event)
    except DemoforgeError as exc:
        raise fail(exc) from None
    rate = summary.frames / summary.seconds if summary.seconds > 0 else 0.0
    typer.echo(f"rendered {summary.episodes} episodes, {summary.frames} frames x {len(config.cameras)} cameras "
               f"in {summary.seconds:.1f} s ({rate:.1f} frames/s) -> {summary.root}")
    sys.stdout.flush()
