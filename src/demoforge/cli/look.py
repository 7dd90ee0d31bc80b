"""`demoforge look-sheet`: a PNG of one scene under several draws of a look."""

from __future__ import annotations

from pathlib import Path

import typer

from demoforge.cli.ranges import MAX_SEED
from demoforge.dataset.guard import guard_output_file


def look_sheet(
    look: str = typer.Option("randomized", "--look", help="Look YAML file or shipped look name (plain, randomized)."),
    out: Path = typer.Option(..., "--out", help="PNG file to write."),
    draws: int = typer.Option(8, "--draws", min=1, max=256, help="Draws (episode copies) shown, in [1, 256]."),
    columns: int = typer.Option(4, "--columns", min=1, max=64, help="Draws per row, in [1, 64]."),
    cameras: str = typer.Option("front,side", "--cameras", help="Cameras stacked in each cell, comma list."),
    family: str = typer.Option("stack_three", "--family", help="Task family of the scene."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED,
                             help="Root of the draws (as render --seed) and of the scene."),
    axes: bool = typer.Option(False, "--axes", help="Camera tuning: draw the world axes (X red, Y green, Z blue) at "
                                                    "the origin on every image and add an overview outlining each "
                                                    "camera's frustum."),
) -> None:
    """Render one task scene under DRAWS draws of a look into a PNG contact sheet."""
    # lazy: the simulator (mujoco), kept off `demoforge --help`
    from demoforge.render.look_file import load_look
    from demoforge.render.sheet import SheetSettings, sheet_image, write_png

    look_file = [look] if Path(look).is_file() else []
    guard_output_file(out, look_file, suffixes=(".png",))  # never over the look it shows
    settings = SheetSettings(draws=draws, columns=columns, family=family, seed=seed,
                             cameras=tuple(c for c in cameras.split(",") if c), axes=axes)
    path = write_png(sheet_image(load_look(look), settings), out)
    typer.echo(f"wrote {draws} draws of look {look!r} -> {path}")
