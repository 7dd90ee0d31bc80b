"""`demoforge render`."""

import typer


def render() -> None:
    """Not available yet."""
    typer.echo("demoforge render: not available yet", err=True)
    raise typer.Exit(2)
