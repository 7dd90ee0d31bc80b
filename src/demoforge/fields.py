"""Config fields that say how they are set: help, range or choices, and their one flag.

    @dataclass(frozen=True)
    class ExecuteConfig:
        envs: int = option(1, "Environments stepped together per worker.", range=(1, 1024), run_default=2)

Each stage's config record (`convert.BakeConfig`, `render.RenderConfig`, `doctor.DoctorConfig`,
...) declares its fields with `option`, next to the code that reads them. One definition gives a
field its YAML key (the field name), its command-line flag (`--envs`, the name with '-' for '_',
unless `flag=` says otherwise), its default, its help and its checks; `nested(Record)` takes
another record's option fields in as the stage's own (the expert runner's limits in the execute
stage's config). `specs(cls)` lists the fields as `FieldSpec`s; `parse_text` turns a command-line
string into a value; `collect` checks a mapping of values (from YAML or parsed flags) and lists
every problem, each naming the key and its flag; `build` makes the record. `demoforge.cli.options`
builds the typer options of a stage command and of `demoforge run` from the same specs, and
`demoforge.pipeline.config` the run config.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from demoforge.errors import got

MAX_WORKERS = 512  # worker slots / processes
MAX_SEED = 2**63 - 1
_NO = object()  # no run default: the field's own


@dataclass(frozen=True)
class FieldSpec:
    """How one option field is set and checked."""

    name: str  # field name: the YAML key
    kind: str  # int, float, bool, str, list (of str), pair (LO,HI), windows (LO,HI;...), workers, mapping
    default: Any  # the value when nothing sets it (on a stage command)
    help: str
    optional: bool  # None is a value ("none" on the command line)
    range: tuple | None  # (low, high) of an int or float; None bound = open
    low_open: bool  # a float's low bound is excluded
    choices: tuple | Callable[[], tuple] | None  # allowed values (of each item of a list)
    flag: str  # the command-line flag, the same on the stage command and on `demoforge run`
    shared: bool  # one value for the whole run (seed, workers, robot): set at the run config's top level
    run: bool  # settable from `demoforge run`
    stage: bool  # an option of the stage command
    stage_required: bool  # the stage command requires it
    run_default: Any  # the default under `demoforge run` (_NO: `default`)
    normalize: Callable[[Any, str], Any] | None  # (value, label) -> stored value; raises DemoforgeError
    metavar: str | None
    owner: str | None = None  # the field of the record that holds this one's nested record (`nested`); None: its own

    def choice_values(self) -> tuple | None:
        return self.choices() if callable(self.choices) else self.choices

    def default_for(self, run: bool) -> Any:
        return self.run_default if run and self.run_default is not _NO else self.default

    def label(self) -> str:
        """How a problem names the field: its key and its flag."""
        return f"{self.name} ({self.flag})"


def option(default: Any, help: str, *, kind: str | None = None, optional: bool | None = None,
           range: tuple | None = None, low_open: bool = False, choices=None, flag: str | None = None,
           shared: bool = False, run: bool = True, stage: bool = True, stage_required: bool = False,
           run_default: Any = _NO, normalize=None, metavar: str | None = None):
    """A dataclass field carrying its FieldSpec metadata (the name is filled in by `specs`)."""
    if kind is None:
        sample = default if default is not None else run_default
        kind = {bool: "bool", int: "int", float: "float", str: "str", tuple: "list"}.get(type(sample))
        if kind is None:
            raise TypeError(f"option({default!r}): give kind=")
    meta = dict(kind=kind, default=default, help=help, optional=default is None if optional is None else optional,
                range=range, low_open=low_open, choices=choices, flag=flag, shared=shared, run=run, stage=stage,
                stage_required=stage_required, run_default=run_default, normalize=normalize, metavar=metavar)
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: default, metadata={"option": meta})
    return field(default=default, metadata={"option": meta})


def nested(cls):
    """A field holding a `cls` record whose option fields are set as the outer record's own (same
    keys and flags, no prefix); its other fields keep their defaults."""
    return field(default_factory=cls, metadata={"nested": cls})


def specs(cls) -> list[FieldSpec]:
    """The option fields of `cls`, in declaration order, a nested record's in its place (fields
    without metadata are not options)."""
    out = []
    for f in dataclasses.fields(cls):
        if "nested" in f.metadata:
            out += [dataclasses.replace(s, owner=f.name) for s in specs(f.metadata["nested"])]
            continue
        meta = f.metadata.get("option")
        if meta is not None:
            out.append(FieldSpec(name=f.name, **{**meta, "flag": meta["flag"] or "--" + f.name.replace("_", "-")}))
    return out


def spec_of(cls, name: str) -> FieldSpec:
    return next(s for s in specs(cls) if s.name == name)


def build(cls, values: dict[str, Any]):
    """A `cls` record from option values by field name (as `collect` gives them), nested records
    made from theirs."""
    own, inner = {}, {}
    for spec in specs(cls):
        if spec.name in values:
            (inner.setdefault(spec.owner, {}) if spec.owner else own)[spec.name] = values[spec.name]
    for f in dataclasses.fields(cls):
        if f.name in values and "option" not in f.metadata and "nested" not in f.metadata:
            own[f.name] = values[f.name]  # a field the stage sets itself (no flag)
    return cls(**own, **{name: next(f for f in dataclasses.fields(cls) if f.name == name).metadata["nested"](**v)
                         for name, v in inner.items()})


def value_of(record, spec: FieldSpec) -> Any:
    """The field's value in `record` (inside its nested record where it has one)."""
    return getattr(getattr(record, spec.owner) if spec.owner else record, spec.name)


def run_record(cls):
    """`cls` with its defaults under `demoforge run`."""
    return build(cls, {s.name: s.default_for(True) for s in specs(cls)})


def replace(record, **changes):
    """`record` with option fields changed by name, those of a nested record included (as
    `dataclasses.replace`)."""
    owners = {s.name: s.owner for s in specs(type(record))}
    own, inner = {}, {}
    for name, value in changes.items():
        (inner.setdefault(owners[name], {}) if owners.get(name) else own)[name] = value
    own.update({owner: dataclasses.replace(getattr(record, owner), **v) for owner, v in inner.items()})
    return dataclasses.replace(record, **own)


# ---- command-line text -> value -------------------------------------------------------------

def _number(text: str, kind: str):
    return int(text.strip()) if kind == "int" else float(text.strip())


def _pair(text: str) -> tuple[float, float]:
    lo, hi = (float(v) for v in text.split(","))
    return lo, hi


def parse_text(spec: FieldSpec, text: Any) -> Any:
    """A command-line value (a string, a list of strings for a list, a bool for a flag) as the
    field's value; raises ValueError with the reason. "none" is None for an optional field."""
    if spec.kind == "bool" or spec.kind == "mapping":
        return text
    if spec.kind == "list":
        items = [v.strip() for t in (text if isinstance(text, (list, tuple)) else [text]) for v in t.split(",")]
        items = [v for v in items if v]
        if not items:
            raise ValueError(f"{list(text) if isinstance(text, (list, tuple)) else text!r} names nothing")
        if spec.optional and items == ["none"]:
            return None
        return tuple(items)
    if spec.optional and isinstance(text, str) and text.strip().lower() in ("none", "null", ""):
        return None
    if spec.kind in ("int", "float"):
        try:
            return _number(text, spec.kind)
        except ValueError:
            raise ValueError(f"{text!r} is not {'an integer' if spec.kind == 'int' else 'a number'}") from None
    if spec.kind == "workers":
        return parse_workers(text)
    if spec.kind == "pair":
        try:
            return _pair(text)
        except ValueError:
            raise ValueError(f"{text!r} is not LO,HI (two numbers)") from None
    if spec.kind == "windows":
        try:
            return tuple(_pair(part) for part in text.split(";"))
        except ValueError:
            raise ValueError(f"{text!r} is not LO,HI[;LO,HI...] (pairs of numbers)") from None
    return text


def parse_workers(value: Any) -> int | str:
    """The one reading of a worker count: "auto" or an integer in [1, MAX_WORKERS] (text or int)."""
    if value == "auto":
        return "auto"
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WORKERS:
        raise ValueError(f"{value!r} must be an integer in [1, {MAX_WORKERS}] or 'auto'")
    return value


def to_text(spec: FieldSpec, value: Any) -> str:
    """A value as the command line (and interactive mode) writes it; the inverse of parse_text."""
    if value is None:
        return "none"
    if spec.kind == "list":
        return ",".join(value)
    if spec.kind == "pair":
        return f"{value[0]:g},{value[1]:g}"
    if spec.kind == "windows":
        return ";".join(f"{lo:g},{hi:g}" for lo, hi in value)
    if spec.kind == "bool":
        return "true" if value else "false"
    return str(value)


# ---- checking values ------------------------------------------------------------------------

def _finite_pair(value) -> bool:
    return (isinstance(value, (list, tuple)) and len(value) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value))


def _pair_got(value) -> str:
    """What a bad pair holds: its first non-number element when it is a pair (YAML's 1e-3 is text)."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        for v in value:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                return f"{list(value)!r}, whose {got(v)} is no number"
    return got(value)


def check_value(spec: FieldSpec, value: Any) -> tuple[Any, str | None]:
    """(the stored value, None) or (None, what is wrong) for a YAML or parsed value."""
    if value is None:
        return (None, None) if spec.optional else (None, "must be given (it cannot be none)")
    kind = spec.kind
    if kind == "bool":
        return (value, None) if isinstance(value, bool) else (None, f"must be true or false, got {got(value)}")
    if kind in ("int", "float"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind == "int" and not isinstance(value, int)):
            return None, (f"must be {'an integer' if kind == 'int' else 'a number'}" + _range_text(spec)
                          + f", got {got(value)}")
        if kind == "float":
            value = float(value)
            if not math.isfinite(value):
                return None, f"{value!r} must be a finite number" + _range_text(spec)
        lo, hi = spec.range or (None, None)
        if (lo is not None and (value <= lo if spec.low_open else value < lo)) or (hi is not None and value > hi):
            return None, f"{value!r} must be {'an integer' if kind == 'int' else 'a number'}" + _range_text(spec)
        return value, None
    if kind == "workers":
        try:
            return parse_workers(value), None
        except ValueError as exc:
            return None, str(exc)
    if kind == "pair":
        return (tuple(float(v) for v in value), None) if _finite_pair(value) else (
            None, f"must be a [lo, hi] pair of finite numbers, got {_pair_got(value)}")
    if kind == "windows":
        if isinstance(value, (list, tuple)) and value and all(_finite_pair(w) for w in value):
            return tuple(tuple(float(v) for v in w) for w in value), None
        return None, f"{value!r} must be a list of [lo, hi] pairs of finite numbers"
    if kind == "list":
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)) or not all(isinstance(x, str) for x in value):
            return None, f"{value!r} must be a list of strings"
        value = tuple(value)
        choices = spec.choice_values()
        bad = [x for x in value if choices is not None and x not in choices]
        return (None, f"{bad} are not among {', '.join(map(str, choices))}") if bad else (value, None)
    if kind == "str":
        if not isinstance(value, str):
            return None, f"{value!r} must be a string"
        choices = spec.choice_values()
        if choices is not None and value not in choices:
            return None, f"{value!r} must be one of {', '.join(str(c) for c in choices if c is not None)}"
        return value, None
    return value, None  # mapping: its normalize checks it


def _range_text(spec: FieldSpec) -> str:
    if spec.range is None:
        return ""
    lo, hi = spec.range
    if hi is None:
        return f" {'>' if spec.low_open else '>='} {lo}"
    return f" in {'(' if spec.low_open else '['}{lo}, {hi}]"


def collect(cls, values: dict[str, Any], *, run: bool = False, prefix: str = "") -> tuple[dict[str, Any], list[str]]:
    """The checked values of every option field of `cls` (defaults for those not in `values`),
    and every problem found, each naming `prefix` + the key and the flag."""
    out, problems = {}, []
    for spec in specs(cls):
        if spec.name not in values or (run and not spec.run):
            out[spec.name] = spec.default_for(run)
            continue
        value, problem = check_value(spec, values[spec.name])
        if problem is None and spec.normalize is not None and value is not None:
            from demoforge.errors import DemoforgeError

            try:
                value = spec.normalize(value, prefix + spec.name)
            except DemoforgeError as exc:
                problem = "\n    ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        if problem is not None:
            problems.append(f"{prefix}{spec.label()}: {problem}")
        else:
            out[spec.name] = value
    return out, problems


def record_problems(record) -> list[str]:
    """What is wrong with the option fields of `record` as a library caller built it (not through
    `collect`): the same checks a flag or a YAML key gets, for its `__post_init__` to raise."""
    problems = []
    for spec in specs(type(record)):
        if spec.owner is None:
            _, problem = check_value(spec, getattr(record, spec.name))
            if problem is not None:
                problems.append(f"{spec.label()}: {problem}")
    return problems


def stage_problems(record) -> list[str]:
    """What the stage would refuse that no one field shows (a family's block count, a look file,
    an encoder setting): the record's own `refusals()`, when it has one."""
    own = getattr(record, "refusals", None)
    return own() if own is not None else []


def to_plain(value: Any) -> Any:
    """A stored value as YAML writes it (tuples as lists)."""
    if isinstance(value, tuple):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    return value


def options_dict(record, *, shared: bool = True) -> dict[str, Any]:
    """The run-settable option fields of `record` as plain YAML values (without the shared ones
    unless `shared`)."""
    return {s.name: to_plain(value_of(record, s)) for s in specs(type(record)) if s.run and (shared or not s.shared)}


# ---- the fields every stage that takes them shares (`shared=True`: one value per run) ----------

def seed_option():
    return option(0, "Seed of environment packages, execution and look draws; the output does not depend on "
                     "--envs or --workers.", range=(0, MAX_SEED), shared=True)


def workers_option():
    return option(1, "Worker processes, or 'auto' (one per core, at most one per work item); the output does not "
                     "depend on it.", kind="workers", shared=True, run_default="auto")


def robot_option():
    return option(None, "Arm of the scenes: a built-in robot card (panda, ur5e_2f85) or a card YAML [default: "
                        "panda]; an environment package has the arm it was built with.", kind="str", shared=True)
