"""`demoforge demo`: the small embedded default job."""

from pathlib import Path

import typer

from demoforge.pipeline.demo import run_demo


def demo(
    out: Path = typer.Option(Path("out/pipeline-demo"), help="Run folder (an earlier demo there is replaced)."),
) -> None:
    """Run the whole pipeline on a small embedded example (two stack_three problems, rendered
    with the plain look, baked to joint_target) and print where the dataset is."""

    run_demo(out, echo=typer.echo)
