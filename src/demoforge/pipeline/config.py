"""The pipeline's one config record: YAML file and command-line flags map onto it.

    config = resolve_config("examples/pipeline/demo.yaml", {"experiment_id": "x", "smoke_test": True})

Unknown keys are errors; every bad value is reported at once. `--smoke-test` is applied
here, so the record saved with a run (`RUN/config.yaml`) is exactly what ran.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from demoforge.errors import DemoforgeError

STAGES = ("tasks", "envs", "execute", "render", "merge", "annotate", "bake", "doctor")
BACKENDS = ("local", "ray")
# Fields that decide how fast a run goes, not what it writes: a resumed run may change them.
SPEED_FIELDS = ("workers", "envs", "backend", "ray_address", "progress")


class PipelineError(DemoforgeError):
    """A pipeline config or run that cannot go ahead."""


@dataclass(frozen=True)
class PipelineConfig:
    """Everything `demoforge run` is told (YAML keys and `--flag` names are the field names)."""

    experiment_id: str  # run folder name under out_dir: letters, digits, '.', '_', '-'
    out_dir: str = "runs"  # parent of the run folder
    family: str = "stack_three"  # task family (demoforge.tasks.FAMILIES)
    problems: int = 2  # problems generated from the family
    task_seed: int = 0  # seed of the task generator
    problem_files: tuple[str, ...] = ()  # PDDL problem files (with sidecars) used instead of generating
    reset_states: int = 4  # environment package: reset states per profile
    profiles: int = 8  # environment package: scene profiles per problem
    episodes_per_problem: int = 4  # execution episodes per problem
    envs: int = 2  # environments stepped together per worker slot
    workers: int | str = "auto"  # worker slots: a count or "auto" (one per core)
    seed: int = 0  # seed of environment packages, execution and look draws
    render_passes: tuple[str, ...] = ()  # looks: "plain", "randomized:N", "LOOK.yaml[:N]"; none = no rendering
    cameras: tuple[str, ...] = ("front", "wrist")  # cameras rendered
    bake_convention: str | None = None  # bake the training split to this convention (convert.CONVENTIONS)
    bake_control_freq: int | None = None  # baked rate [Hz]; None = native; below it, only the kept ticks are rendered
    doctor_fail_on: str | None = None  # "warning" or "error": a doctor finding this grave fails the run
    robot: str | None = None  # the run's arm: a built-in card name (demoforge.sim.ROBOTS) or a card YAML; None = panda
    robot_start: dict | None = None  # windows of each reset state's arm start (RobotStartParams fields; YAML true = the defaults); None = home
    play: bool = False  # execute chains goals in one scene without resets (pipeline.play)
    play_goals: int = 3  # goals per play episode
    skip: tuple[str, ...] = ()  # stages not run (see STAGES)
    backend: str = "local"  # "local" or "ray"
    ray_address: str | None = None  # Ray cluster address (HEAD:PORT); None = start a Ray on this machine
    smoke_test: bool = False  # one problem, two episodes, front camera only
    progress: bool = True  # live progress line on a terminal

    @property
    def run_dir(self) -> Path:
        return Path(self.out_dir) / self.experiment_id

    def runs(self, stage: str) -> bool:
        return stage not in self.skip

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


_TUPLES = {f.name for f in fields(PipelineConfig) if f.type.startswith("tuple")}
# Stated ranges [low, high] of the integer fields (the highs match the single commands' options:
# tasks gen --count, env build, generate; a count beyond them would run for ever, not fail).
_SEED_MAX = 2**63 - 1
_INTS = {"play_goals": (1, 100), "problems": (1, 100_000), "task_seed": (0, _SEED_MAX), "reset_states": (1, 100_000),
         "profiles": (1, 10_000), "episodes_per_problem": (1, 1_000_000), "envs": (1, 1024), "seed": (0, _SEED_MAX)}
_MAX_WORKERS = 512
_CHOICES = {"backend": BACKENDS, "doctor_fail_on": (None, "warning", "error")}


def config_from_dict(raw: dict[str, Any], source: str = "config") -> PipelineConfig:
    """Validate `raw` (YAML keys or flags) into a PipelineConfig; all problems reported at once."""
    if not isinstance(raw, dict):
        raise PipelineError(f"{source}: must be a mapping of config keys, got {type(raw).__name__}")
    known = {f.name for f in fields(PipelineConfig)}
    problems = [f"{source}: unknown key {k!r}; keys: {', '.join(sorted(known))}" for k in sorted(set(raw) - known)]
    values = {k: v for k, v in raw.items() if k in known}
    for name in _TUPLES & set(values):
        v = values[name]
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
            problems.append(f"{source}: {name}: {v!r} must be a list of strings")
        else:
            values[name] = tuple(v)
    for name, (low, high) in _INTS.items():
        v = values.get(name, 1 if low else 0)
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            problems.append(f"{source}: {name}: {v!r} must be an integer >= {low}")
        elif v > high:
            problems.append(f"{source}: {name}: {v!r} must be an integer in [{low}, {high}]")
    exp = values.get("experiment_id")
    if not isinstance(exp, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", exp):
        problems.append(f"{source}: experiment_id: {exp!r} must be a name of letters, digits, '.', '_' or '-' "
                        "(pass --experiment-id)")
    w = values.get("workers", "auto")
    if isinstance(w, str) and w.isdigit():
        w = values["workers"] = int(w)
    if w != "auto" and (isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= _MAX_WORKERS):
        problems.append(f"{source}: workers: {w!r} must be an integer in [1, {_MAX_WORKERS}] or 'auto'")
    for name, choices in _CHOICES.items():
        if name in values and values[name] not in choices:
            problems.append(f"{source}: {name}: {values[name]!r} must be one of {[c for c in choices if c]}")
    bad = [s for s in values.get("skip", ()) if s not in STAGES]
    if bad:
        problems.append(f"{source}: skip: {bad} are not stages; stages: {', '.join(STAGES)}")
    if values.get("bake_convention") is not None:
        from demoforge.convert import CONVENTIONS

        if values["bake_convention"] not in CONVENTIONS:
            problems.append(f"{source}: bake_convention: {values['bake_convention']!r}; conventions: "
                            f"{', '.join(sorted(CONVENTIONS))}")
    fq = values.get("bake_control_freq")
    if fq is not None and (isinstance(fq, bool) or not isinstance(fq, int) or not 1 <= fq <= 10_000):
        problems.append(f"{source}: bake_control_freq: {fq!r} must be an integer in [1, 10000] or null")
    for name in ("smoke_test", "progress", "play"):
        if name in values and not isinstance(values[name], bool):
            problems.append(f"{source}: {name}: {values[name]!r} must be true or false")
    if values.get("play") and values.get("backend", "local") != "local":
        problems.append(f"{source}: play: runs on the local backend only")
    if not values.get("cameras", ("x",)):
        problems.append(f"{source}: cameras: give at least one camera")
    problems += [f"{source}: {p}" for p in _input_problems(values)]
    problems += _robot_start(values, source)
    if problems:
        raise PipelineError("invalid pipeline config:\n  " + "\n  ".join(problems))
    config = PipelineConfig(**values)
    if config.smoke_test:
        config = dataclasses.replace(config, **SMOKE, problem_files=config.problem_files[:1])
    return config


SMOKE = {"problems": 1, "episodes_per_problem": 2, "envs": 2, "reset_states": 2, "profiles": 1, "cameras": ("front",)}


def _robot_start(values: dict[str, Any], source: str) -> list[str]:
    """Validate `robot_start` (true, false/null or a mapping of RobotStartParams fields) and store
    its full windows, so the saved config says exactly what ran."""
    from demoforge.randomize.robot_start import params_from_dict, params_to_dict

    value = values.get("robot_start")
    if value is None or value is False:
        values["robot_start"] = None
        return []
    try:
        values["robot_start"] = params_to_dict(params_from_dict(value, where="robot_start"))
    except DemoforgeError as exc:
        return [f"{source}: {line.strip()}" for line in str(exc).splitlines()[1:] or [str(exc)]]
    return []


def robot_start_params(config: PipelineConfig, inputs: list[str]):
    """The RobotStartParams execution draws PDDL inputs' starts from (None: home, or the inputs are
    the run's environment package, whose reset states hold their starts)."""
    from demoforge.randomize.robot_start import params_from_dict

    if config.robot_start is None or any(Path(p).is_dir() for p in inputs):
        return None
    return params_from_dict(config.robot_start)


def _input_problems(values: dict[str, Any]) -> list[str]:
    """What a run would find wrong only after earlier stages ran: the family, cameras, looks and
    problem files; and explicit values that --smoke-test would replace."""
    from demoforge.sim.scene import SceneSpec
    from demoforge.tasks import FAMILIES

    problems = []
    robot = values.get("robot")
    if robot is not None and not isinstance(robot, str):
        problems.append(f"robot: {robot!r} must be a built-in robot card name or a card YAML path")
    elif robot is not None:
        from demoforge.errors import DemoforgeError
        from demoforge.sim import resolve_robot

        try:
            card = resolve_robot(robot)
        except DemoforgeError as exc:
            problems.append(f"robot: {exc}")
        else:
            cameras = SMOKE["cameras"] if values.get("smoke_test") is True else values.get("cameras", ("wrist",))
            if card.wrist_camera is None and values.get("render_passes") and "wrist" in cameras:
                problems.append(f"cameras: robot {card.name!r} has no wrist camera; render other cameras "
                                "(e.g. --camera front)")
    family = values.get("family", "stack_three")
    if family not in FAMILIES:
        problems.append(f"family: {family!r} is not a task family; families: {', '.join(sorted(FAMILIES))}")
    known = sorted({c.name for c in SceneSpec().cameras} | {"wrist"})
    bad = [c for c in values.get("cameras", ()) if isinstance(c, str) and c not in known]
    if bad:
        problems.append(f"cameras: {bad} are not cameras of the scene; cameras: {', '.join(known)}")
    for text in values.get("render_passes", ()):
        if isinstance(text, str) and text != "none":
            from demoforge.errors import DemoforgeError
            from demoforge.render.stage import parse_look_arg

            try:
                parse_look_arg(text)
            except DemoforgeError as exc:
                problems.append(f"render_passes: {text!r}: {exc}")
    for f in values.get("problem_files", ()):
        if isinstance(f, str) and not Path(f).is_file():
            problems.append(f"problem_files: {f!r} is not a file")
    if values.get("smoke_test") is True:
        clash = [k for k, v in SMOKE.items() if k in values and _plain(values[k]) != _plain(v)]
        if clash:
            problems.append(f"smoke_test: it sets {', '.join(f'{k}={_plain(SMOKE[k])}' for k in clash)}, but "
                            f"{', '.join(f'{k}={_plain(values[k])}' for k in clash)} was given; drop --smoke-test "
                            "or those values")
    return problems


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
    merged = {**raw, **{k: v for k, v in flags.items() if v is not None}}
    return config_from_dict(merged, str(path) if path is not None else "flags")


def robot_card(config: PipelineConfig):
    """The RobotCard of the run's `robot` (None: the built-in Panda)."""
    from demoforge.sim import resolve_robot

    return None if config.robot is None else resolve_robot(config.robot)


def dump_config(config: PipelineConfig) -> str:
    return yaml.safe_dump(config.to_dict(), sort_keys=True)


def output_fields(config: PipelineConfig) -> dict[str, Any]:
    """The fields that shape a run's outputs (what a resume must match)."""
    return {k: v for k, v in config.to_dict().items() if k not in SPEED_FIELDS}
