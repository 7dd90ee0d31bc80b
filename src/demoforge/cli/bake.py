"""`demoforge bake`."""

import typer


def bake() -> None:
    """Not available yet."""
    typer.echo("demoforge bake: not available yet", err=True)
    raise typer.Exit(2)
