"""`demoforge eval-batch`: policies x checkpoints x tasks from a YAML spec (`demoforge.policy.batch`)."""

from __future__ import annotations

from pathlib import Path

import typer

from demoforge.cli.options import stage_command
from demoforge.policy.batch import BatchRunConfig, load_batch, run_batch


@stage_command(BatchRunConfig)
def eval_batch(
    spec: Path = typer.Argument(..., help="Batch spec (YAML): policies, tasks, reference figures, settings."),
    out: Path = typer.Option(..., "--out", help="OUT/runs/<policy>/<task>/, OUT/SUMMARY.md, OUT/summary.json."),
    options: BatchRunConfig = None,
) -> None:
    """Evaluate every policy (and checkpoint) of a spec on every task, then write one summary: per task and
    in total, success, partial success and full completion beside the spec's reference figures. A rerun skips
    finished runs, so a killed batch resumes."""

    batch = load_batch(spec)  # every spec error is reported before anything is written
    summary = run_batch(batch, out, score_only=options.score_only, limit=options.limit,
                        progress=lambda what: typer.echo(f"running {what}"))
    for name, p in summary["policies"].items():
        t = p["total"]
        pending = sum(r["status"] == "pending" for r in p["tasks"].values())
        typer.echo(f"{name}: {t['episodes']} episodes, success {t['success_rate']:.3f}, partial "
                   f"{t['partial_success']:.3f}, full completion {t['full_completion_rate']:.3f}"
                   + (f" ({pending} tasks pending)" if pending else ""))
    typer.echo(f"summary: {out / 'SUMMARY.md'}, {out / 'summary.json'}")
