"""`demoforge doctor`."""

import typer


def doctor() -> None:
    """Not available yet."""
    typer.echo("demoforge doctor: not available yet", err=True)
    raise typer.Exit(2)


def coverage() -> None:
    """Not available yet."""
    typer.echo("demoforge coverage: not available yet", err=True)
    raise typer.Exit(2)
