"""`demoforge demo`: the small embedded default job."""

from pathlib import Path

import typer

from demoforge.errors import DemoforgeError


def demo(
    out: Path = typer.Option(Path("out/pipeline-demo"), help="Run folder (an earlier demo there is replaced)."),
) -> None:
    """Run the whole pipeline on a small embedded example (two stack_three problems, rendered
    with the plain look, baked to joint_target) and print where the dataset is."""
    from demoforge.pipeline.demo import run_demo  # imports the simulator stack only when run

    try:
        run_demo(out, echo=typer.echo)
    except DemoforgeError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
