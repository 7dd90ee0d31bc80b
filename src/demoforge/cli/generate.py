"""`demoforge generate`."""

import typer


def generate() -> None:
    """Not available yet."""
    typer.echo("demoforge generate: not available yet", err=True)
    raise typer.Exit(2)
