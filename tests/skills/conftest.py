"""Tiny scenes for the skill tests: the built-in arm, the table and a few 4 cm cubes."""

import math

import mujoco
import numpy as np

from demoforge.sim import Box, build_scene, default_scene
from demoforge.skills import execute, plan_skill, skill_context

CUBE = 0.04  # edge [m]
TABLE_Z = 0.4  # default table height [m]


def yaw_quat(deg: float) -> tuple[float, float, float, float]:
    half = math.radians(deg) / 2
    return (math.cos(half), 0.0, 0.0, math.sin(half))


def cube(name, x, y, *, level=0, quat=(1.0, 0.0, 0.0, 0.0), rgba=(0.8, 0.2, 0.2, 1.0)) -> Box:
    """A 4 cm cube on the table (level 0) or on `level` others."""
    return Box(name, (CUBE,) * 3, (x, y, TABLE_Z + CUBE / 2 + level * CUBE), quat=quat, rgba=rgba)


def settle(scene, seconds: float = 0.3) -> None:
    mujoco.mj_step(scene.model, scene.data, round(seconds / scene.model.opt.timestep))


def make(*boxes, regions=None, **ctx_kwargs):
    """A settled scene with `boxes` and its skill context."""
    scene = build_scene(default_scene(props=tuple(boxes)))
    settle(scene)
    return scene, skill_context(scene, regions=regions, **ctx_kwargs)


def run(scene, ctx, operator, args, seed=0):
    """Plan and execute one skill, then let things settle; returns the plan."""
    plan = plan_skill(ctx, operator, args, np.random.default_rng(seed))
    assert plan.ok, plan.failure
    execute(scene, plan)
    settle(scene)
    return plan


def pose(scene, name):
    d = scene.data
    return d.body(name).xpos.copy(), d.body(name).xmat.reshape(3, 3).copy()


def touching(scene, a: str, b_prefix: str) -> bool:
    """Whether body `a` has a contact with a geom whose name starts with `b_prefix`."""
    m, d = scene.model, scene.data
    for c in d.contact[: d.ncon]:
        names = {m.geom(c.geom1).name, m.geom(c.geom2).name}
        if a in names and any(n.startswith(b_prefix) for n in names):
            return True
    return False
