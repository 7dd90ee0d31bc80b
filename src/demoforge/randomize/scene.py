"""Physical scene draws: one sample of a problem's sidecar ranges, recorded as JSON.

`sample_scene(params, rng)` draws, in a fixed order and each from its own child stream of
`rng` (so widening one range never reshuffles the others):

    0 block_size  one cube edge per block, in sorted block-name order [m]
    1 table       table top height offset [m]
    2 friction    sliding friction of blocks and table top [-]

A random robot start is drawn per reset state, not per scene (`demoforge.randomize.robot_start`,
`symbolic.sample_reset_state`); an episode's draw record carries the start its reset state drew.

Seeding: an episode's draw comes from `episode_rng(params, episode)`, a package's fixed
profiles from `bake_profiles(params, n, seed)`; both derive a `SeedSequence` from the
sidecar's per-problem `seed` and a stable key, never from global state.

JSON schema `demoforge.scene_draw/1` (sorted keys, lengths [m], angles [rad]):

    {"schema": ..., "problem": "stack_three-all-0000",
     "block_size_m": {"red": 0.041, ...}, "table_height_offset_m": -0.004, "friction": 0.93,
     "robot_start": null | {...}}   (home, or the episode's start: randomize.robot_start's JSON)
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from demoforge.errors import DemoforgeError, listing
from demoforge.randomize.robot_start import RobotStart, start_from_dict, start_to_dict
from demoforge.tasks.scene import Interval, SceneParams

SCHEMA = "demoforge.scene_draw/1"
STREAMS = ("block_size", "table", "friction")
_EPISODE, _PROFILE = 1, 2  # spawn-key domains, so episode and profile draws never coincide


class SceneDrawError(DemoforgeError):
    """A scene draw could not be made or read."""


@dataclass(frozen=True)
class SceneDraw:
    """One sample of a problem's physical scene."""

    problem: str  # PDDL problem name
    block_size_m: tuple[tuple[str, float], ...]  # (block, cube edge [m]), sorted by block
    table_height_offset_m: float  # table top offset from nominal [m]
    friction: float  # sliding friction of blocks and table top [-]
    robot_start: RobotStart | None = None  # the episode's drawn start; None: the card's home pose, gripper open


def episode_rng(params: SceneParams, episode: int) -> np.random.Generator:
    """The generator of episode `episode`'s draw of problem `params.problem`."""
    return np.random.default_rng(np.random.SeedSequence(params.seed, spawn_key=(_EPISODE, episode)))


def _uniform(rng: np.random.Generator, interval: Interval) -> float:
    lo, hi = interval
    return float(rng.uniform(lo, hi)) if hi > lo else float(lo)


def sample_scene(params: SceneParams, rng: np.random.Generator) -> SceneDraw:
    """Draw block sizes, table offset and friction (the robot starts at home: `robot_start` None).

    Each quantity reads its own child of `rng` (spawned in `STREAMS` order); pass a fresh
    generator from `episode_rng` for reproducible draws."""
    streams = dict(zip(STREAMS, rng.spawn(len(STREAMS)), strict=True))
    sizes = tuple((name, _uniform(streams["block_size"], params.block_size_m)) for name, _ in sorted(params.blocks))
    return SceneDraw(
        problem=params.problem,
        block_size_m=sizes,
        table_height_offset_m=_uniform(streams["table"], params.table_height_offset_m),
        friction=_uniform(streams["friction"], params.friction),
    )


def bake_profiles(params: SceneParams, n: int, seed: int) -> tuple[SceneDraw, ...]:
    """`n` fixed scene profiles for a scene package built with `seed`; profile k
    depends only on (problem seed, package seed, k)."""
    if n < 1:
        raise SceneDrawError(f"profiles: {n} must be >= 1")
    return tuple(
        sample_scene(params, np.random.default_rng(np.random.SeedSequence(params.seed, spawn_key=(_PROFILE, seed, k))))
        for k in range(n)
    )


def draw_to_dict(draw: SceneDraw) -> dict:
    start = draw.robot_start
    return {
        "schema": SCHEMA,
        "problem": draw.problem,
        "block_size_m": dict(draw.block_size_m),
        "table_height_offset_m": draw.table_height_offset_m,
        "friction": draw.friction,
        "robot_start": None if start is None else start_to_dict(start),
    }


def draw_to_json(draw: SceneDraw) -> str:
    """Stable text: sorted keys, floats as Python writes them (exact round trip)."""
    return json.dumps(draw_to_dict(draw), sort_keys=True) + "\n"


def draw_from_dict(data: dict, *, file: str = "<scene draw>") -> SceneDraw:
    keys = {"schema", "problem", "block_size_m", "table_height_offset_m", "friction", "robot_start"}
    if not isinstance(data, dict):
        raise SceneDrawError(f"{file}: a scene draw must be a JSON object with keys {sorted(keys)}")
    problems = [f"missing key {k!r}" for k in sorted(keys - data.keys())]
    problems += [f"unknown key {k!r}" for k in sorted(data.keys() - keys)]
    if not problems and data["schema"] != SCHEMA:
        problems.append(f"schema {data['schema']!r}; this demoforge reads {SCHEMA!r}")
    if problems:
        raise SceneDrawError(f"{file}: invalid scene draw:" + listing(problems, indent=""))
    try:
        start = data["robot_start"]
        return SceneDraw(
            problem=str(data["problem"]),
            block_size_m=tuple(sorted((str(k), float(v)) for k, v in data["block_size_m"].items())),
            table_height_offset_m=float(data["table_height_offset_m"]),
            friction=float(data["friction"]),
            robot_start=None if start is None else start_from_dict(start),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SceneDrawError(f"{file}: invalid scene draw: {type(exc).__name__}: {exc}") from None


def draw_from_json(text: str, *, file: str = "<scene draw>") -> SceneDraw:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SceneDrawError(f"{file}:{exc.lineno}: not JSON: {exc.msg}") from None
    return draw_from_dict(data, file=file)
