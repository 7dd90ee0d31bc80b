"""`demoforge run -i`: choose the stages and edit every option at prompts before the run starts.

Each stage is offered in order (Enter keeps it as configured); then the run's own options and
each chosen stage's can be edited one by one, each prompt showing the current value as the
command line writes it (Enter keeps it, `none` clears an optional one). The edited config is
checked as a whole, like a YAML file, and shown before the run starts.
"""

from __future__ import annotations

from typing import Any

import typer

from demoforge.pipeline.config import STAGE_CONFIGS, STAGES, PipelineConfig, config_from_dict, dump_config
from demoforge.fields import FieldSpec, parse_text, specs, to_plain, to_text

_NOT_EDITED = ("experiment_id", "skip", "smoke_test")  # given on the command line / chosen stage by stage / a preset


def _ask(spec: FieldSpec, label: str, value: Any) -> Any:
    """The field's new value from a prompt (re-asked until it parses)."""
    if spec.kind == "mapping":
        shown = "none" if value is None else "as configured"
        text = typer.prompt(f"{label} (a YAML file, true, or none)", default=shown)
        if text == shown:
            return value
        return {"none": None, "true": True, "false": None}.get(text.strip().lower(), text.strip())
    if spec.kind == "bool":
        return typer.confirm(label, default=bool(value))
    shown = to_text(spec, value)
    while True:
        text = typer.prompt(label, default=shown)
        if text == shown:
            return value
        try:
            return parse_text(spec, text)
        except ValueError as exc:
            typer.echo(f"  {exc}; try again")


def _edit(spec_list: list[FieldSpec], values: dict[str, Any], prefix: str) -> None:
    for spec in spec_list:
        if spec.name in _NOT_EDITED:
            continue
        new = _ask(spec, f"  {prefix}{spec.name} ({spec.flag})", values.get(spec.name))
        values[spec.name] = to_plain(new)


def edit_config(config: PipelineConfig) -> PipelineConfig:
    """`config` as the user edits it at the prompts (see the module docstring)."""
    raw = config.to_dict()
    typer.echo(f"interactive run {config.experiment_id}: Enter keeps the value shown")
    chosen = [s for s in STAGES if typer.confirm(f"run stage {s}?", default=config.runs(s))]
    raw["skip"] = [s for s in STAGES if s not in chosen]
    if typer.confirm("edit the run's options (out_dir, seed, workers, robot, backend, ...)?", default=False):
        _edit(specs(PipelineConfig), raw, "")
    for stage, cls in STAGE_CONFIGS.items():
        if stage in chosen and typer.confirm(f"edit {stage} options?", default=False):
            _edit([s for s in specs(cls) if s.run and not s.shared], raw[stage], f"{stage}.")
    edited = config_from_dict(raw, "interactive")
    typer.echo(dump_config(edited).rstrip())
    if not typer.confirm("start the run?", default=True):
        raise typer.Exit(0)
    return edited
