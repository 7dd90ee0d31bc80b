"""`demoforge bake`: raw episodes -> a training dataset under one convention at one rate."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from demoforge.cli.options import OptionsError, stage_command
from demoforge.cli.progress import StepProgress
from demoforge.convert import BAKE_PATH
from demoforge.convert import bake as run_bake
from demoforge.convert.config import BakeConfig
from demoforge.dataset.guard import holds_files
from demoforge.pipeline.stages import bake_models


@stage_command(BakeConfig)
def bake(
    sources: list[Path] = typer.Argument(..., help="Source dataset root(s) (LeRobot v3.0 or v2.1), robomimic HDF5 "
                                         "files, or any format a reader is registered for "
                                         "(demoforge.convert.readers); one control law across all."),
    out: Path = typer.Option(..., "--out", help="New dataset root for the baked dataset."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress (a bar on a terminal, lines with an ETA otherwise)."),
    options: BakeConfig = None,
) -> None:
    """Project raw episodes to a training convention at a control rate; stamps meta/bake.json and modality.json.
    Every option is also a key of `demoforge run` (its bake stage) under the same name."""

    if options.control_space is None:
        raise OptionsError("--control-space none: bake needs a control space (none means 'no bake' only in "
                           "demoforge run)")
    complete = holds_files(out)  # bake moves OUT into place whole: a non-empty one it accepts is this bake, finished
    with StepProgress("bake", "episodes", quiet=quiet) as progress:
        root = run_bake(sources, out, options, progress=progress, models=bake_models(options))
    if complete:
        typer.echo(f"bake: {root} is already complete with these inputs; nothing to do")
        return
    rate = f"{options.control_freq} Hz" if options.control_freq else "native rate"
    typer.echo(f"baked {len(sources)} source(s) into {root}: {options.control_space} at {rate} "
               f"({options.lerobot_format}; meta/bake.json, meta/modality.json)")
    for note in json.loads((root / BAKE_PATH).read_text()).get("notes", []):
        typer.echo(f"note: {note}")
