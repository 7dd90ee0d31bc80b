"""`demoforge look-sheet`: a PNG of one scene under several draws of a look."""

from __future__ import annotations

from pathlib import Path

import typer

from demoforge.cli.options import stage_command
from demoforge.dataset.guard import guard_output_file
from demoforge.render.sheet import LookSheetConfig


@stage_command(LookSheetConfig)
def look_sheet(
    out: Path = typer.Option(..., "--out", help="PNG file to write."),
    options: LookSheetConfig = None,
) -> None:
    """Render one task scene under DRAWS draws of a look into a PNG contact sheet."""
    from demoforge.render.look_file import load_look
    from demoforge.render.sheet import sheet_image, write_png

    look = options.look
    look_file = [look] if Path(look).is_file() else []
    guard_output_file(out, look_file, suffixes=(".png",))  # never over the look it shows
    path = write_png(sheet_image(load_look(look), options.sheet), out)
    typer.echo(f"wrote {options.sheet.draws} draws of look {look!r} -> {path}")
