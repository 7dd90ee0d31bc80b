"""The contact lint of material pairs: the presets settle on each other, an under-damped custom
material explodes (C001), and finger surfaces are read from the robot model."""

import dataclasses

import numpy as np
import pytest

from demoforge.errors import SimError
from demoforge.sim import MATERIALS, SceneSpec, build_scene, material
from demoforge.sim.lint_pairs import finger_surfaces, lint_pair, material_surface, probe_model

DT = 1 / 600
# Time constant at the 2-step floor material_problems allows, but nearly undamped: measured, every
# dampratio <= 0.1 at timeconst <= 4 steps blows up in a pair of its own; the presets use 0.6-1.5.
BOUNCY = dataclasses.replace(material("wood"), name="bouncy", solref=(2 * DT, 1e-3))


@pytest.mark.parametrize("block", sorted(MATERIALS))
def test_every_preset_settles_on_every_preset_without_an_explosion(block):
    for surface in sorted(MATERIALS):
        report = lint_pair(MATERIALS[block], material_surface(MATERIALS[surface], surface), edge=0.05, timestep=DT)
        assert not [f for f in report.findings if f.code == "C001"], (block, surface, report.findings)


def test_an_under_damped_custom_material_explodes_against_itself_and_names_the_fix():
    report = lint_pair(BOUNCY, material_surface(BOUNCY, "bouncy"), edge=0.05, timestep=DT)
    (finding,) = report.findings
    assert finding.code == "C001" and finding.severity == "error"
    assert "timeconst" in finding.fix and "timestep" in finding.fix


def test_the_probe_is_a_cube_of_the_block_material_on_the_surface():
    m = probe_model(MATERIALS["steel"], material_surface(MATERIALS["rubber"], "table"), edge=0.04, timestep=DT)
    assert m.body_mass[m.body("block").id] == pytest.approx(7850.0 * 0.04 ** 3)
    np.testing.assert_array_equal(m.geom_friction[m.geom("surface").id], MATERIALS["rubber"].friction)
    assert m.opt.timestep == DT
    with pytest.raises(SimError, match="edge"):
        lint_pair(MATERIALS["steel"], material_surface(MATERIALS["wood"], "t"), edge=0.0, timestep=DT)


def test_finger_surfaces_are_the_built_in_pads_with_their_priority():
    scene = build_scene(SceneSpec())
    (pad,) = finger_surfaces(scene.model, scene.robot.finger_bodies)  # both pads share their parameters
    assert pad.label in ("finger geom 'robot/pad1'", "finger geom 'robot/pad2'")
    assert pad.priority == 1 and pad.solref == (0.004, 1.0)
