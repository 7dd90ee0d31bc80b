"""`demoforge demo`: the small embedded default job."""

import shutil
from pathlib import Path

import typer

from demoforge.dataset.check import check_dataset
from demoforge.dataset.synthetic import write_synthetic_dataset


def demo(
    out: Path = typer.Option(Path("out/demo"), help="Where to write the demo dataset (replaced if it is an earlier demo)."),
    episodes: int = typer.Option(4, min=1, help="Number of episodes."),
    seed: int = typer.Option(0, help="Run seed."),
) -> None:
    """Write a small dataset with video, check it, and print where it is."""
    if out.exists():
        if not (out / "meta/demoforge/demo.json").is_file():
            typer.echo(f"error: {out} exists and is not an earlier demo output; choose another --out", err=True)
            raise typer.Exit(2)
        shutil.rmtree(out)
    root = write_synthetic_dataset(out, episodes=episodes, seed=seed)
    problems = check_dataset(root)
    if problems:
        for p in problems:
            typer.echo(f"  {p}", err=True)
        raise typer.Exit(1)
    typer.echo(f"demo dataset written and checked: {root.resolve()}")
    typer.echo(f"  inspect it with: demoforge dataset info {root}")
