"""`demoforge demo`: the small embedded default job."""

import typer


def demo(out: str = typer.Option("out/demo", help="Where to write the demo dataset.")) -> None:
    """Run the embedded default job and print where its output is."""
    raise typer.Exit(1)
