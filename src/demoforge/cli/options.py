"""Typer options generated from the stages' config records (`demoforge.fields`): one flag per
field, its name, help, default and range from the field's metadata, so a stage command and
`demoforge run` cannot drift apart.

    @stage_command(ExecuteConfig)
    def generate(inputs: list[Path] = typer.Argument(...), ..., options: ExecuteConfig = None) -> None:
        ...  # `options`: the checked record (every problem of the flags is reported at once, exit 2)

Every option is read as text (a flag as a bool) and parsed by `fields.parse_text`,
then checked by `fields.collect` and the record's own `check()`: the same code
that checks a run's YAML. Errors are DemoforgeErrors, printed by the one handler of the
command group (`cli.failures.DemoforgeGroup`: `error: ...`, exit 2).
"""

from __future__ import annotations

import functools
import inspect
import typing
from typing import Any

import typer

from demoforge.errors import DemoforgeError
from demoforge.pipeline.config import STAGE_CONFIGS, PipelineConfig
from demoforge.fields import FieldSpec, build, collect, parse_text, specs, stage_problems, to_text


class OptionsError(DemoforgeError):
    """Command-line options that do not make a valid stage config record."""


def help_text(spec: FieldSpec, run: bool) -> str:
    """The field's help with its choices, range and default."""
    text = spec.help
    default = spec.default_for(run)
    if not (spec.stage_required and not run) and spec.kind != "mapping" and "[default:" not in spec.help:
        shown = to_text(spec, default) if default not in ((), None) else "none"
        text = f"{text.rstrip('.')} [default: {shown}]."
    choices = spec.choice_values()
    if choices and spec.kind in ("str", "list") and len(choices) <= 12:
        text += f" Choices: {', '.join(str(c) for c in choices if c is not None)}."
    if spec.range is not None:
        lo, hi = spec.range
        text += f" Range: {'(' if spec.low_open else '['}{lo}, {'inf' if hi is None else hi}]."
    return text


def _params(spec: FieldSpec, run: bool) -> list[tuple[str, Any, Any]]:
    """(parameter name, annotation, typer.Option) of the flag of one field."""
    required = spec.stage_required and not run
    name = f"opt_{spec.name}"
    help_ = help_text(spec, run)
    if spec.kind == "bool":
        return [(name, bool | None, typer.Option(None, f"{spec.flag}/--no-{spec.flag[2:]}", help=help_))]
    if spec.name == "robot_start":
        return [(name, bool | None, typer.Option(None, "--robot-start/--home", help=help_)),
                (f"{name}__spec", str | None, typer.Option(None, "--robot-start-spec", metavar="FILE.yaml",
                                                           help="YAML of robot start windows (RobotStartParams "
                                                                "fields); implies --robot-start."))]
    if spec.kind == "list":
        return [(name, list[str] | None, typer.Option(None, spec.flag, help=help_ + " Repeatable.",
                                                      metavar=spec.metavar or "TEXT"))]
    metavar = spec.metavar or {"int": "INTEGER", "float": "FLOAT", "workers": "N|auto", "pair": "LO,HI"}.get(
        spec.kind, "TEXT")
    return [(name, str if required else str | None,
             typer.Option(... if required else None, spec.flag, help=help_, metavar=metavar))]


def given_values(fields: list[FieldSpec], kwargs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The parsed values of the flags that were given (popped from `kwargs`) and the problems."""
    values, problems = {}, []
    for spec in fields:
        raw = kwargs.pop(f"opt_{spec.name}", None)
        if spec.name == "robot_start":
            path = kwargs.pop(f"opt_{spec.name}__spec", None)
            raw = path if path is not None else raw
        if raw is None or (isinstance(raw, (list, tuple)) and not raw):
            continue
        try:
            values[spec.name] = parse_text(spec, raw)
        except ValueError as exc:
            problems.append(f"{spec.label()}: {exc}")
    return values, problems


def _wrap(fn, fields: list[FieldSpec], run: bool, call):
    """`fn` with the flags of `fields` added to its signature; `call(fn, values, problems, kwargs)` runs it."""
    sig = inspect.signature(fn)
    hints = typing.get_type_hints(fn)
    base = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in sig.parameters.values()
            if p.name not in ("options", "flags", "flag_problems")]
    extra = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=opt, annotation=ann)
             for spec in fields for name, ann, opt in _params(spec, run)]

    @functools.wraps(fn)
    def wrapper(**kwargs):
        values, problems = given_values(fields, kwargs)
        return call(values, problems, kwargs)

    params = base + extra
    wrapper.__signature__ = sig.replace(parameters=params)
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


def stage_command(cls, *, exclude: tuple[str, ...] = ()):
    """Decorator: the command takes every stage option of `cls` as a flag and is called with
    `options=` the checked record (see the module docstring)."""

    def deco(fn):
        fields = [s for s in specs(cls) if s.stage and s.name not in exclude]

        def call(values, problems, kwargs):
            kept = {k: kwargs[k] for k in exclude if k in kwargs}
            checked, bad = collect(cls, {**values, **kept})
            problems = problems + bad
            options = build(cls, checked) if not problems else None
            if options is not None:
                problems += stage_problems(options)
            if problems:
                raise OptionsError("invalid options:\n  " + "\n  ".join(problems))
            return fn(**kwargs, options=options)

        return _wrap(fn, fields, False, call)

    return deco


def run_fields() -> list[FieldSpec]:
    """Every flag of `demoforge run`: the run's own fields and every stage's (shared ones once)."""
    out = [s for s in specs(PipelineConfig)]
    for cls in STAGE_CONFIGS.values():
        out += [s for s in specs(cls) if s.run and not s.shared]
    return out


def run_command(fn):
    """Decorator for `demoforge run`: every run field as a flag; `fn` is called with `flags=` the
    parsed values given (field name -> value) and `flag_problems=` what could not be parsed."""
    fields = run_fields()

    def call(values, problems, kwargs):
        return fn(**kwargs, flags=values, flag_problems=problems)

    return _wrap(fn, fields, True, call)
