"""`demoforge export openpi|gr00t SRC --out DIR`: a baked dataset in the layout a trainer's own loader reads."""

from __future__ import annotations

from pathlib import Path

import typer

from demoforge.cli.progress import StepProgress
from demoforge.dataset.guard import holds_files


def export(
    trainer: str = typer.Argument(..., help="openpi or gr00t."),
    source: Path = typer.Argument(..., help="A dataset written by `demoforge bake` (v3.0; read only)."),
    out: Path = typer.Option(..., "--out", help="New folder for the exported dataset."),
    action_horizon: int = typer.Option(None, "--action-horizon", min=1, max=1000,
                                       help="Action steps per training sample the statistics are computed for, "
                                            "in [1, 1000] (default: openpi 50, gr00t 16)."),
    repo_id: str = typer.Option(None, "--repo-id", help="openpi: the dataset's name under $HF_LEROBOT_HOME "
                                                        "(default: the --out folder's name)."),
    workers: str = typer.Option("1", "--workers", help="Processes writing episodes; 'auto' = one per core. The "
                                                       "output does not depend on it."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress (a bar on a terminal, lines with an ETA otherwise)."),
) -> None:
    """Write SOURCE as LeRobot v2.1 with the trainer's files: openpi's norm_stats.json and training config
    (delta-action mask), or GR00T's modality.json, relative_stats.json and modality config."""
    # lazy: the dataset writers (pyarrow, PyAV), kept off `demoforge --help`
    from demoforge.convert.bake import auto_workers
    from demoforge.export import ExportConfig, ExportError, export as run_export
    from demoforge.export.run import TRAINERS

    config = ExportConfig(trainer=trainer, action_horizon=action_horizon, repo_id=repo_id)
    if workers == "auto":
        slots = auto_workers()
    elif workers.isdigit() and int(workers) >= 1:
        slots = int(workers)
    else:
        raise ExportError(f"--workers {workers!r} must be an integer >= 1 or 'auto'")
    complete = holds_files(out)  # export moves OUT into place whole: a non-empty OUT it accepts is finished
    with StepProgress("export", "episodes", quiet=quiet) as progress:
        root = run_export(source, out, config, workers=slots, progress=progress)
    if complete:
        typer.echo(f"export: {root} is already complete with these inputs; nothing to do")
        return
    files = {"openpi": ("meta/openpi/norm_stats.json", "meta/openpi/demoforge_config.py"),
             "gr00t": ("meta/modality.json", "meta/relative_stats.json", "meta/demoforge_modality_config.py")}
    written = ", ".join(f for f in files[trainer] if (root / f).is_file())
    typer.echo(f"exported {source} for {trainer} into {root} (LeRobot v2.1; {written}; "
               f"action horizon {config.horizon()}; read by {TRAINERS[trainer].loader})")
