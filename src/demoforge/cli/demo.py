"""`demoforge demo`: the small embedded default job."""

from pathlib import Path

import typer


def demo(
    out: Path = typer.Option(Path("out/pipeline-demo"), help="Run folder (an earlier demo there is replaced)."),
) -> None:
    """Run the whole pipeline on a small embedded example (two stack_three problems, rendered
    with the plain look, baked to joint_target) and print where the dataset is."""
    from demoforge.pipeline.demo import run_demo  # lazy: the simulator stack, kept off `demoforge --help`

    run_demo(out, echo=typer.echo)
