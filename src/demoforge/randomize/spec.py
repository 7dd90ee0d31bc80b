"""RandomizationSpec: which physical quantities vary between episodes, and by how much.

Every field is off (None) by default. Multiplier ranges are `(low, high)` pairs of factors on
the nominal value; jitters are half-widths around the nominal. The scene ranges (friction,
block size, table height offset) override the ranges a problem's scene sidecar carries, so
one spec file describes a whole run. YAML form: the field names below as keys, pairs as
two-element lists; unknown keys are errors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path

import yaml

from demoforge.errors import DemoforgeError, got

Range = tuple[float, float]

# Fields drawn by `sample`, in the fixed order draws are made and written.
MULTIPLIERS = ("mass_scale", "damping_scale", "frictionloss_scale", "kp_scale", "kd_scale")
JITTERS = ("camera_pos_jitter_m", "camera_rot_jitter_rad", "spawn_jitter", "gravity_jitter_mps2")
SCENE_RANGES = ("friction", "block_size_m", "table_height_offset_m")


# Gravity may vary by at most half of itself: more could weaken it to nothing or reverse it.
MAX_GRAVITY_JITTER_MPS2 = 4.9


class RandomizationError(DemoforgeError):
    """A randomization spec or draw is invalid, or does not fit the model it is applied to."""


@dataclass(frozen=True)
class RandomizationSpec:
    """Physics domain randomization for one run; see the module docstring."""

    mass_scale: Range | None = None  # per-body mass multiplier [-]; the inertia tensor scales with it
    damping_scale: Range | None = None  # per-joint damping multiplier [-]
    frictionloss_scale: Range | None = None  # per-joint dry friction (frictionloss) multiplier [-]
    kp_scale: Range | None = None  # per-arm-joint position gain multiplier [-]
    kd_scale: Range | None = None  # per-arm-joint damping gain multiplier [-]
    camera_pos_jitter_m: float | None = None  # camera offset, uniform per axis in [-j, j] [m]
    camera_rot_jitter_rad: float | None = None  # camera tilt about a uniform random axis, angle in [0, j] [rad]
    cameras: tuple[str, ...] | None = None  # model camera names to jitter; None = every camera
    spawn_jitter: float | None = None  # start-pose offset per arm joint, uniform in [-j, j] [rad] ([m] for slides)
    gravity_jitter_mps2: float | None = None  # gravity magnitude offset, uniform in [-j, j] [m/s^2]
    props: bool = False  # mass, damping and frictionloss also vary on props, not only on the robot
    friction: Range | None = None  # overrides the scene's sliding friction range [-]
    block_size_m: Range | None = None  # overrides the scene's cube edge range [m]
    table_height_offset_m: Range | None = None  # overrides the scene's table height offset range [m]

    def __post_init__(self) -> None:
        problems = spec_problems(self)
        if problems:
            raise RandomizationError("randomization spec is invalid:\n  " + "\n  ".join(problems))


def _is_number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _range_problems(name: str, value: object, *, low_min: float | None, strict: bool = False) -> list[str]:
    if value is None:
        return []
    if not (isinstance(value, tuple | list) and len(value) == 2):
        return [f"{name}: must be a [low, high] pair of numbers, got {got(value)}"]
    if bad := [v for v in value if not _is_number(v)]:
        return [f"{name}: low and high must be numbers, got {got(bad[0])}"]
    lo, hi = (float(v) for v in value)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [f"{name}: {list(value)} must be finite numbers"]
    problems = []
    if lo > hi:
        problems.append(f"{name}: low {lo} > high {hi}; swap them")
    if low_min is not None and (lo <= low_min if strict else lo < low_min):
        problems.append(f"{name}: low {lo} must be {'>' if strict else '>='} {low_min}")
    return problems


def _jitter_problems(name: str, value: object, *, high: float | None = None) -> list[str]:
    if value is None:
        return []
    if not _is_number(value):
        return [f"{name}: must be a finite number, got {got(value)}"]
    if not math.isfinite(float(value)):
        return [f"{name}: {value!r} must be a finite number"]
    if value < 0:
        return [f"{name}: {value} must be >= 0 (it is a half-width)"]
    if high is not None and value > high:
        return [f"{name}: {value} must be <= {high}"]
    return []


def spec_problems(spec: RandomizationSpec) -> list[str]:
    """Every reason `spec` is invalid, as `field: what` messages."""
    problems = _range_problems("mass_scale", spec.mass_scale, low_min=0.0, strict=True)
    for name in ("damping_scale", "frictionloss_scale", "kp_scale", "kd_scale"):
        problems += _range_problems(name, getattr(spec, name), low_min=0.0)
    problems += _jitter_problems("camera_pos_jitter_m", spec.camera_pos_jitter_m)
    problems += _jitter_problems("camera_rot_jitter_rad", spec.camera_rot_jitter_rad, high=math.pi)
    problems += _jitter_problems("spawn_jitter", spec.spawn_jitter)
    problems += _jitter_problems("gravity_jitter_mps2", spec.gravity_jitter_mps2, high=MAX_GRAVITY_JITTER_MPS2)
    if spec.cameras is not None and not (
        isinstance(spec.cameras, tuple) and all(isinstance(c, str) and c for c in spec.cameras)
    ):
        problems.append(f"cameras: {spec.cameras!r} must be a list of camera names")
    if not isinstance(spec.props, bool):
        problems.append(f"props: must be true or false, got {got(spec.props)}")
    problems += _range_problems("friction", spec.friction, low_min=0.0, strict=True)
    problems += _range_problems("block_size_m", spec.block_size_m, low_min=0.0, strict=True)
    problems += _range_problems("table_height_offset_m", spec.table_height_offset_m, low_min=None)
    return problems


def spec_from_dict(raw: object, *, where: str = "randomization spec") -> RandomizationSpec:
    """A spec from a YAML/JSON mapping; unknown keys and every bad value reported at once."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise RandomizationError(f"{where}: must be a mapping of field names to values, got {type(raw).__name__}")
    known = [f.name for f in fields(RandomizationSpec)]
    problems = [f"unknown key {k!r}; known keys: {', '.join(known)}" for k in sorted(map(str, set(raw) - set(known)))]
    values = {}
    for key in known:
        if key not in raw or raw[key] is None:
            continue
        value = raw[key]
        if key in MULTIPLIERS or key in SCENE_RANGES:
            value = tuple(value) if isinstance(value, list | tuple) else value
        elif key == "cameras":
            value = tuple(value) if isinstance(value, list | tuple) else value
        values[key] = value
    if problems:
        raise RandomizationError(f"{where}:\n  " + "\n  ".join(problems))
    try:
        return RandomizationSpec(**values)
    except RandomizationError as exc:
        raise RandomizationError(f"{where}: {exc}") from None


def spec_to_dict(spec: RandomizationSpec) -> dict:
    """The enabled fields as a plain mapping (what `spec_from_dict` reads back)."""
    out: dict = {}
    for f in fields(spec):
        value = getattr(spec, f.name)
        if value is None or (f.name == "props" and value is False):
            continue
        out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def load_spec(path: str | Path) -> RandomizationSpec:
    """A spec from a YAML file (an empty file is the all-off spec)."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        byte = exc.object[exc.start:exc.start + 1]
        raise RandomizationError(f"randomization spec {path}: not UTF-8 text (byte {byte!r} at offset {exc.start}); "
                                 "save it as UTF-8") from None
    except OSError as exc:
        raise RandomizationError(f"cannot read randomization spec {path}: {exc.strerror or exc}; "
                                 "check the path") from None
    except yaml.YAMLError as exc:
        raise RandomizationError(f"randomization spec {path}: not valid YAML ({exc}); fix its syntax") from None
    return spec_from_dict(raw, where=str(path))


def spec_with_overrides(spec: RandomizationSpec, items: list[str] | tuple[str, ...], *,
                        where: str = "--set") -> RandomizationSpec:
    """`spec` with command-line `field=value` items applied, each value in YAML syntax:
    `mass_scale=[0.9,1.1]`, `spawn_jitter=0.05`, `props=true`, `kp_scale=null` (turns a field off)."""
    raw = spec_to_dict(spec)
    problems = []
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            problems.append(f"{item!r} is not FIELD=VALUE (e.g. mass_scale=[0.9,1.1])")
            continue
        try:
            raw[key.strip()] = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            problems.append(f"{key.strip()}: value {text!r} is not YAML ({exc.__class__.__name__})")
    if problems:
        raise RandomizationError(f"{where}:\n  " + "\n  ".join(problems))
    return spec_from_dict(raw, where=where)
