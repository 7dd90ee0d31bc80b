"""The pipeline's one config record: YAML file and command-line flags map onto it.

    config = resolve_config("examples/pipeline/demo.yaml", {"experiment_id": "x", "smoke_test": True})

Unknown keys are errors; every bad value is reported at once. `--smoke-test` is applied
here, so the record saved with a run (`RUN/config.yaml`) is exactly what ran.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from demoforge import fields
from demoforge.convert.config import BakeConfig
from demoforge.doctor.config import DoctorConfig
from demoforge.errors import DemoforgeError
from demoforge.execute.config import ExecuteConfig
from demoforge.fields import (
    build, collect, option, options_dict, robot_option, run_record, seed_option, specs, stage_problems, to_plain,
)
from demoforge.pipeline.tasks_config import TasksConfig
from demoforge.randomize.robot_start import robot_start_option
from demoforge.render.config import RenderConfig
from demoforge.scenes.config import ScenesConfig
from demoforge.tasks.package import task_packages_option

STAGES = ("tasks", "scenes", "execute", "render", "merge", "annotate", "bake", "doctor")
BACKENDS = ("local", "ray")
RENDER_SCHEDULES = ("coupled", "pipelined")  # see demoforge.pipeline.pipelined
# Fields that decide how fast a run goes, not what it writes: a resumed run may change them.
SPEED_FIELDS = ("workers", "envs", "backend", "ray_address", "progress", "render_schedule")


class PipelineError(DemoforgeError):
    """A pipeline config or run that cannot go ahead."""


# Stage name -> its config record, owned by the stage's package (merge and annotate take none).
STAGE_CONFIGS: dict[str, type] = {"tasks": TasksConfig, "scenes": ScenesConfig, "execute": ExecuteConfig,
                                  "render": RenderConfig, "bake": BakeConfig, "doctor": DoctorConfig}
# The scenes stage's old name. A mapping under `envs:` (or `envs` in skip) in a run config written
# before the rename is read as `scenes`, with a note; a top-level `envs: N` is execute's --envs.
OLD_STAGE_NAMES = {"envs": "scenes"}


SMOKE_HELP = ("one problem with fixed scene parameters (block size 0.04 m, table offset 0 m, friction 0.9: one "
              "scene profile), two reset states, two episodes, front camera only; randomization off (no physics "
              "randomization, no robot start windows); looks are the --look given")


def _experiment_id(value: str, where: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", value):
        raise PipelineError(f"{value!r} must be a name of letters, digits, '.', '_' or '-'")
    return value


@dataclass(frozen=True)
class PipelineConfig:
    """Everything `demoforge run` is told: the run's own fields, the shared ones (seed, workers,
    robot, robot_start) and each stage's config record (`STAGE_CONFIGS`)."""

    experiment_id: str = option(None, "Run name; the run folder is OUT_DIR/ID.", kind="str", optional=False,
                                normalize=_experiment_id)
    out_dir: str = option("runs", "Parent of run folders.")
    seed: int = seed_option()
    workers: int | str = option("auto", "Worker slots of every stage, or 'auto' (one per core, at most one per "
                                        "work item); the output does not depend on it.", kind="workers")
    robot: str | None = robot_option()
    robot_start: dict | None = robot_start_option()
    task_packages: tuple[str, ...] = task_packages_option()
    skip: tuple[str, ...] = option((), "Stages not run (also --skip-STAGE).", choices=STAGES)
    backend: str = option("local", "Where execute's work items run: local or ray.", choices=BACKENDS)
    ray_address: str | None = option(None, "Ray cluster address (HEAD:PORT) [default: start a Ray on this "
                                           "machine].", kind="str")
    render_schedule: str = option("coupled", "When the render's work runs: coupled (the render stage, after "
                                             "execute) or pipelined (each problem's episodes rendered as soon as "
                                             "they are generated, on the same workers); the output is the same.",
                                  choices=RENDER_SCHEDULES)
    smoke_test: bool = option(False, "The smallest run: " + SMOKE_HELP + ".")
    progress: bool = option(True, "Live progress line on a terminal.")
    tasks: TasksConfig = field(default_factory=lambda: run_record(TasksConfig))
    scenes: ScenesConfig = field(default_factory=lambda: run_record(ScenesConfig))
    execute: ExecuteConfig = field(default_factory=lambda: run_record(ExecuteConfig))
    render: RenderConfig = field(default_factory=lambda: run_record(RenderConfig))
    bake: BakeConfig = field(default_factory=lambda: run_record(BakeConfig))
    doctor: DoctorConfig = field(default_factory=lambda: run_record(DoctorConfig))

    @property
    def run_dir(self) -> Path:
        return Path(self.out_dir) / self.experiment_id

    def runs(self, stage: str) -> bool:
        return stage not in self.skip

    def problem_count(self) -> int:
        return len(self.tasks.problem_files) if self.tasks.problem_files else self.tasks.problems

    def to_dict(self) -> dict[str, Any]:
        """The YAML of `RUN/config.yaml`: the run's fields, then one mapping per stage (shared fields at the top)."""
        out = options_dict(self)
        for stage in STAGE_CONFIGS:
            out[stage] = options_dict(getattr(self, stage), shared=False)
        return out


SHARED = ("seed", "workers", "robot", "robot_start", "task_packages")
# What --smoke-test sets: one problem of fixed scene parameters (the default ranges' midpoints), two
# episodes of it, no randomization (physics, robot start), the front camera only.
SMOKE: dict[str, dict[str, Any]] = {
    "tasks": {"problems": 1, "block_size": (0.04, 0.04), "table_height_offset": (0.0, 0.0), "friction": (0.9, 0.9)},
    "scenes": {"reset_states": 2, "profiles": 1},
    "execute": {"episodes_per_problem": 2, "envs": 2, "randomization": None, "randomize": ()},
    "render": {"cameras": ("front",)},
    "": {"robot_start": None},
}

def _owners() -> dict[str, str]:
    """Flat key (field name) -> stage of every stage field that is not shared."""
    return {spec.name: stage for stage, cls in STAGE_CONFIGS.items() for spec in specs(cls)
            if spec.run and not spec.shared}


def _old_stage_names(raw: dict[str, Any], source: str) -> dict[str, Any]:
    """`raw` with a stage's old name (`OLD_STAGE_NAMES`) replaced, as a mapping key or in `skip`,
    and a note on stderr for each. Only a mapping is the old stage: `envs: 2` stays execute's."""
    out, said = {}, []
    for key, value in raw.items():
        new = OLD_STAGE_NAMES.get(key)
        if new is None or not isinstance(value, dict):
            out.setdefault(key, value)
            continue
        if isinstance(raw.get(new), dict):
            for k in sorted(set(raw[new]) & set(value)):
                raise PipelineError(f"{source}: {new}.{k} is given twice (also under {key}:, the stage's old name)")
            out[new] = {**value, **raw[new]}
        else:
            out[new] = value
        said.append((key, f"the stage mapping `{key}:` is read as `{new}:`"))
    skip = out.get("skip")
    if isinstance(skip, (list, tuple)):
        old = [s for s in skip if isinstance(s, str) and s in OLD_STAGE_NAMES]
        said += [(s, f"skip {s} is read as skip {OLD_STAGE_NAMES[s]}") for s in old]
        if old:
            out["skip"] = type(skip)(OLD_STAGE_NAMES[s] if s in old else s for s in skip)
    for old, line in said:
        print(f"note: {source}: {line}; `{old}` is the stage's old name, deprecated (`{old}: N` sets "
              f"execute.{old}, the environments stepped together)", file=sys.stderr, flush=True)
    return out


def nest(raw: dict[str, Any], source: str = "config") -> dict[str, Any]:
    """`raw` with every stage field under its stage's mapping (`envs: 2` -> `execute: {envs: 2}`),
    so a file and the flags merge key by key. Unknown keys stay where they are for
    `config_from_dict` to report."""
    if not isinstance(raw, dict):
        return raw
    raw = _old_stage_names(raw, source)
    top_names = {s.name for s in specs(PipelineConfig)}
    owners = _owners()
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key in STAGE_CONFIGS and isinstance(value, dict):
            section = out.setdefault(key, {})
            for k in set(section) & set(value):
                raise PipelineError(f"{source}: {key}.{k} is given twice (also as a top-level key)")
            section.update(value)
        elif key not in top_names and key in owners:
            section = out.setdefault(owners[key], {})
            if key in section:
                raise PipelineError(f"{source}: {key} is given twice (also under {owners[key]}:)")
            section[key] = value
        else:
            out[key] = value
    return out


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over`'s keys replace `base`'s, stage mapping by stage mapping (both nested by `nest`)."""
    out = dict(base)
    for key, value in over.items():
        if key in STAGE_CONFIGS and isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def _place(raw: dict[str, Any], source: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]], list[str]]:
    """Sort `raw`'s keys into the run's own values and each stage's: a stage's mapping
    (`execute: {envs: 2}`), or a stage field's name at the top level (`envs: 2`)."""
    raw = _old_stage_names(raw, source)
    top_names = {s.name for s in specs(PipelineConfig)}
    owners = _owners()
    top, stages, problems = {}, {stage: {} for stage in STAGE_CONFIGS}, []
    for key, value in raw.items():
        if key in STAGE_CONFIGS and isinstance(value, dict):
            names = {s.name: s for s in specs(STAGE_CONFIGS[key]) if s.run}
            for k, v in value.items():
                name = k
                if name not in names:
                    problems.append(f"{source}: {key}: unknown key {k!r}; keys: "
                                    f"{', '.join(n for n, s in names.items() if not s.shared)}")
                elif names[name].shared:
                    problems.append(f"{source}: {key}.{k}: {k} is one value for the whole run; set it at the top "
                                    f"level ({k}: ...)")
                elif name in stages[key]:
                    problems.append(f"{source}: {key}.{name} is given twice (also as a top-level key)")
                else:
                    stages[key][name] = v
        elif key in top_names:
            top[key] = value
        elif key in owners:
            if key in stages[owners[key]]:
                problems.append(f"{source}: {key} is given twice (also under {owners[key]}:)")
            stages[owners[key]][key] = value
        else:
            problems.append(f"{source}: unknown key {key!r}; keys: {', '.join(sorted(top_names))}, a stage's "
                            f"mapping ({', '.join(STAGE_CONFIGS)}) or a stage field (see `demoforge run --help`)")
    return top, stages, problems


def config_from_dict(raw: dict[str, Any], source: str = "config") -> PipelineConfig:
    """Validate `raw` (YAML keys or flags) into a PipelineConfig; every problem of every stage
    reported at once, before any stage runs."""
    if not isinstance(raw, dict):
        raise PipelineError(f"{source}: must be a mapping of config keys, got {type(raw).__name__}")
    top_raw, stage_raw, problems = _place(raw, source)
    smoke = top_raw.get("smoke_test") is True
    if smoke:
        problems += _smoke_clashes(top_raw, stage_raw, source)
    top, bad = collect(PipelineConfig, top_raw, run=True)
    problems += [f"{source}: {p}" for p in bad]
    if "experiment_id" not in top_raw:
        problems.append(f"{source}: experiment_id: must be given (pass --experiment-id)")
    shared = {k: top.get(k) for k in SHARED}
    records = {}
    for stage, cls in STAGE_CONFIGS.items():
        values, bad = collect(cls, stage_raw[stage], run=True, prefix=f"{stage}.")
        problems += [f"{source}: {p}" for p in bad]
        if not bad:
            names = {s.name for s in specs(cls)}
            records[stage] = build(cls, {**values, **{k: v for k, v in shared.items() if k in names}})
    if smoke:
        records = {stage: fields.replace(r, **SMOKE.get(stage, {})) for stage, r in records.items()}
        top.update(SMOKE[""])
        if "tasks" in records:
            records["tasks"] = fields.replace(records["tasks"], problem_files=records["tasks"].problem_files[:1])
        for stage in ("scenes", "execute"):
            if stage in records:
                records[stage] = fields.replace(records[stage], robot_start=None)
    for stage, record in records.items():
        problems += [f"{source}: {stage}: {p}" for p in stage_problems(record)]
    if len(records) == len(STAGE_CONFIGS):
        problems += [f"{source}: {p}" for p in _run_problems(top, records)]
    if problems:
        raise PipelineError("invalid pipeline config:\n  " + "\n  ".join(problems))
    return PipelineConfig(**top, **records)


def _smoke_clashes(top: dict[str, Any], stages: dict[str, dict[str, Any]], source: str) -> list[str]:
    """Explicit values --smoke-test would replace."""
    clash = []
    for stage, values in SMOKE.items():
        given = top if stage == "" else stages[stage]
        for k, v in values.items():
            if k in given and to_plain(given[k]) != to_plain(v) and not (v is None and given[k] is False):
                clash.append((k, to_plain(v), to_plain(given[k])))
    if not clash:
        return []
    return [f"{source}: smoke_test: it sets {', '.join(f'{k}={v}' for k, v, _ in clash)}, but "
            f"{', '.join(f'{k}={g}' for k, _, g in clash)} was given; drop --smoke-test or those values"]


def _run_problems(top: dict[str, Any], records: dict[str, Any]) -> list[str]:
    """What only the run as a whole can get wrong: the robot and its cameras."""
    problems = []
    render = records["render"]
    robot = top.get("robot")
    if robot is not None:
        from demoforge.sim import resolve_robot

        try:
            card = resolve_robot(robot)
        except DemoforgeError as exc:
            problems.append(f"robot: {exc}")
        else:
            if card.wrist_camera is None and render.looks and "wrist" in render.cameras:
                problems.append(f"render.cameras (--cameras): robot {card.name!r} has no wrist camera; render other "
                                "cameras (e.g. --cameras front)")
    return problems


def robot_start_params(config: PipelineConfig, inputs: list[str]):
    """The RobotStartParams execution draws PDDL inputs' starts from (None: home, or the inputs are
    the run's scene package, whose reset states hold their starts)."""
    if any(Path(p).is_dir() for p in inputs):
        return None
    return config.execute.robot_start_params()


def load_yaml(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise PipelineError(f"config file {str(path)!r} does not exist")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PipelineError(f"{path}: not valid YAML: {exc}") from None
    return {} if raw is None else raw


def resolve_config(path: str | Path | None, flags: dict[str, Any]) -> PipelineConfig:
    """The file's keys (if any) overridden by the flags that were given (None = not given)."""
    raw = load_yaml(path) if path is not None else {}
    if not isinstance(raw, dict):
        raise PipelineError(f"{path}: must be a mapping of config keys")
    given = nest({k: v for k, v in flags.items() if v is not None}, "flags")
    merged = merge(nest(raw, str(path)), given)
    return config_from_dict(merged, str(path) if path is not None else "flags")


def robot_card(config: PipelineConfig):
    """The RobotCard of the run's `robot` (None: the built-in Panda)."""
    from demoforge.sim import resolve_robot

    return None if config.robot is None else resolve_robot(config.robot)


def dump_config(config: PipelineConfig) -> str:
    return yaml.safe_dump(config.to_dict(), sort_keys=True)


def output_fields(config: PipelineConfig) -> dict[str, Any]:
    """The fields that shape a run's outputs (what a resume must match), flat: `execute.envs`."""
    flat = {}
    for key, value in config.to_dict().items():
        if key in STAGE_CONFIGS:
            flat.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return {k: v for k, v in flat.items() if k.rpartition(".")[2] not in SPEED_FIELDS}


def saved_output_fields(path: Path) -> dict[str, Any]:
    """The output-shaping fields of a run's saved config (`RUN/config.yaml`), for a resume to compare."""
    raw = load_yaml(path)
    try:
        return output_fields(config_from_dict(raw, str(path)))
    except PipelineError as exc:
        raise PipelineError(f"{path}: the saved config no longer validates ({exc}); choose another "
                            "--experiment-id") from None


def run_domain(config: PipelineConfig) -> str:
    """The `--domain` the run's problems are read against: the task package that brings its family,
    or, for given problem files, the one whose domain their first problem names (`(:domain NAME)`);
    the built-in blocks world when no loaded package has that domain."""
    from demoforge.tasks.package import owner, package_of_domain  # lazy: keeps the config reader light

    files = config.tasks.problem_files
    if not files:
        return owner("families", config.tasks.family).name
    found = re.search(r"\(:domain\s+([^\s()]+)\s*\)", Path(files[0]).read_text(encoding="utf-8"))
    pkg = None if found is None else package_of_domain(found.group(1))
    return "blocks" if pkg is None else pkg.name
