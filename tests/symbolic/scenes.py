"""Inline blocks problems and scenes for the symbolic tests."""

import mujoco

from demoforge.randomize.scene import SceneDraw
from demoforge.scenes import build_task_scene
from demoforge.symbolic import abstract, block_rotation, rotation_quat
from demoforge.tasks import BlockLook, Region, SceneParams, domain_text, parse_task, static_facts
from demoforge.tasks.pddl_text import problem_to_pddl

EDGE = 0.04
COLOURS = {"a": (0.9, 0.1, 0.1, 1.0), "b": (0.1, 0.7, 0.2, 1.0), "c": (0.1, 0.2, 0.9, 1.0)}


def make_task(init, *, blocks=("a", "b", "c"), regions=(), goal="(and (on_table a))", name="p"):
    objects = [(b, "block") for b in blocks] + [(r, "region") for r in regions]
    text = problem_to_pddl(name=name, domain_name="demoforge-blocks", objects=objects,
                           init=[*init, *static_facts()], goal=goal)
    return parse_task(text, domain_text=domain_text("blocks"), problem_file=f"{name}.pddl")


def make_params(blocks=("a", "b", "c"), regions=(), name="p", **ranges):
    return SceneParams(
        problem=name, family="inline", split="all", seed=42,
        blocks=tuple((b, BlockLook(COLOURS.get(b, (0.5, 0.5, 0.5, 1.0)), "A", "task")) for b in sorted(blocks)),
        regions=tuple(sorted(regions)), **ranges,
    )


def make_draw(blocks=("a", "b", "c"), name="p", edge=EDGE, robot_start=None):
    return SceneDraw(name, tuple((b, edge) for b in sorted(blocks)), 0.0, 0.9, robot_start)


LEFT = ("left", Region((-0.1, 0.1), (0.18, 0.30)))


def scene_for(init=(), *, blocks=("a", "b", "c"), regions=(), **kwargs):
    task = make_task(list(init), blocks=blocks, regions=[r for r, _ in regions])
    params = make_params(blocks, regions)
    scene, binding = build_task_scene(task, params, make_draw(blocks), **kwargs)
    return scene, binding


def place(scene, block, xy_table, *, z_table=None, face="pz", yaw="yaw0"):
    """Put `block` at table-frame x, y (on the table unless `z_table` [m] above it), oriented."""
    spec = scene.spec
    adr = scene.prop_qpos[block]
    x, y = spec.table.center[0] + xy_table[0], spec.table.center[1] + xy_table[1]
    z = spec.table.height + (EDGE / 2 if z_table is None else z_table)
    scene.data.qpos[adr:adr + 3] = (x, y, z)
    scene.data.qpos[adr + 3:adr + 7] = rotation_quat(block_rotation(face, yaw))
    scene.data.qvel[:] = 0.0


def settle(scene, seconds=0.3):
    mujoco.mj_forward(scene.model, scene.data)
    mujoco.mj_step(scene.model, scene.data, round(seconds / scene.model.opt.timestep))


def fluent(scene, binding):
    return abstract(scene.model, scene.data, binding) - binding.static_atoms


def away(scene, blocks):
    """Park blocks in a row at the table's far edge, upright."""
    for k, b in enumerate(blocks):
        place(scene, b, (0.4, -0.3 + 0.1 * k))

