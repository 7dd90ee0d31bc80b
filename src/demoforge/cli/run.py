"""`demoforge run`: the whole pipeline in one command (see demoforge.pipeline)."""

from __future__ import annotations

from pathlib import Path

import typer

from demoforge.cli.options import run_command
from demoforge.cli.progress import StepProgress


@run_command
def run(
    config: Path | None = typer.Option(None, "--config", help="Pipeline config YAML: the run's keys, one mapping per "
                                       "stage (tasks:, scenes:, execute:, render:, bake:, doctor:) or stage keys at "
                                       "the top level; flags override it."),
    interactive: bool = typer.Option(False, "-i", "--interactive", help="Choose the stages and edit every option "
                                     "at prompts before the run starts (Enter keeps the value shown)."),
    resume: bool = typer.Option(False, "--resume", help="Skip finished stages; restart the first unfinished one."),
    skip_tasks: bool = typer.Option(False, "--skip-tasks"),
    skip_scenes: bool = typer.Option(False, "--skip-scenes"),
    skip_envs: bool = typer.Option(False, "--skip-envs", hidden=True),  # the scenes stage's old name, deprecated
    skip_execute: bool = typer.Option(False, "--skip-execute"),
    skip_render: bool = typer.Option(False, "--skip-render"),
    skip_merge: bool = typer.Option(False, "--skip-merge"),
    skip_annotate: bool = typer.Option(False, "--skip-annotate"),
    skip_bake: bool = typer.Option(False, "--skip-bake"),
    skip_doctor: bool = typer.Option(False, "--skip-doctor"),
    flags: dict | None = None,
    flag_problems: list | None = None,
) -> None:
    """Tasks -> scene packages -> execution -> render passes -> merge -> annotate -> bake -> doctor, resumable.

    Every stage option is a flag here under the name its own command uses (demoforge generate, render,
    bake, tasks gen, scenes build, doctor) and a key of the --config YAML; all are checked before the
    first stage runs."""
    import dataclasses

    from demoforge.pipeline import run_pipeline
    from demoforge.pipeline.config import PipelineError, resolve_config

    if skip_envs:
        typer.echo("note: --skip-envs is read as --skip-scenes; `envs` is the stage's old name, deprecated "
                   "(--envs N sets execute.envs, the environments stepped together)", err=True)
    skips = {"tasks": skip_tasks, "scenes": skip_scenes or skip_envs, "execute": skip_execute, "render": skip_render,
             "merge": skip_merge, "annotate": skip_annotate, "bake": skip_bake, "doctor": skip_doctor}
    problems = [f"flags: {p}" for p in flag_problems or []]
    try:
        cfg = resolve_config(config, flags or {})
    except PipelineError as exc:
        if not problems:
            raise
        lines = str(exc).splitlines()
        raise PipelineError("\n  ".join([lines[0], *problems, *(line.strip() for line in lines[1:])])) from None
    if problems:
        raise PipelineError("invalid pipeline config:\n  " + "\n  ".join(problems))
    if any(skips.values()):
        cfg = dataclasses.replace(cfg, skip=tuple(sorted(set(cfg.skip) | {s for s, v in skips.items() if v})))
    if interactive:
        from demoforge.cli.interactive import edit_config

        cfg = edit_config(cfg)
    with StepProgress("run", quiet=not cfg.progress) as display:
        result = run_pipeline(cfg, resume=resume, echo=typer.echo, progress=display, on_stage=display.stage)
    typer.echo(f"run folder: {result.run_dir}")
    typer.echo(f"dataset: {result.final}")
    if result.failures is not None:
        typer.echo(f"failures: {result.failures}")
    for stage in ("execute", "merge"):
        if stage in result.notes:
            typer.echo(f"{stage}: {result.notes[stage]}")
    typer.echo(result.doctor_summary)
    if result.doctor_failed:
        raise typer.Exit(1)
