"""A look recolours every free object of a scene, not only its boxes: a task package's cylinders
and meshes are drawn in the look's colour and finish too, and only a box gets a glyph."""

from __future__ import annotations

import numpy as np
import pytest

from demoforge.render import LookError, draw_look, load_look, look_scene, look_seed, look_targets
from demoforge.sim import Box, Cylinder, MeshProp, build_scene, default_scene


def _cup() -> MeshProp:
    """A small closed prism: eight vertices, twelve triangles (one convex piece)."""
    v = np.array([[x, y, z] for x in (-0.02, 0.02) for y in (-0.02, 0.02) for z in (-0.03, 0.03)], float)
    f = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                  [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    return MeshProp("cup", v, f, pos=(0.45, -0.1, 0.46), rgba=(0.1, 0.5, 0.6, 1.0), decompose="none")


@pytest.fixture(scope="module")
def scene():
    return build_scene(default_scene(props=(
        Box("red", (0.04,) * 3, (0.5, 0.1, 0.43), rgba=(0.85, 0.15, 0.15, 1.0)),
        Cylinder("can", 0.03, 0.1, (0.5, 0.2, 0.46), rgba=(0.2, 0.4, 0.8, 1.0)),
        _cup(),
    )))


def test_targets_hold_every_free_object_and_glyphs_go_to_boxes_only(scene):
    targets = look_targets(scene)
    assert set(targets.blocks) == {"red", "can", "cup"}
    assert targets.no_glyphs == {"can", "cup"}
    draw = draw_look(load_look("randomized"), look_seed(0, "randomized", 0, 0), targets)
    assert draw["blocks"]["red"]["glyph"] is not None
    assert draw["blocks"]["can"]["glyph"] is None and draw["blocks"]["cup"]["glyph"] is None


def test_cylinders_and_meshes_take_the_drawn_colour_and_finish(scene):
    draw = draw_look(load_look("randomized"), look_seed(3, "randomized", 1, 0), look_targets(scene))
    model = look_scene(scene, draw).model
    for name in ("can", "cup"):
        item = draw["blocks"][name]
        body = model.body(name).id
        geoms = [g for g in range(model.ngeom) if model.geom_bodyid[g] == body]
        assert geoms
        for g in geoms:
            np.testing.assert_allclose(model.geom_rgba[g, :3], item["rgb"], atol=1e-6)
            mat = model.geom_matid[g]
            assert model.mat_specular[mat] == pytest.approx(item["specular"], abs=1e-6)
            assert model.mat_shininess[mat] == pytest.approx(item["shininess"], abs=1e-6)
        # the drawn colour is the built one jittered, not another object's
        assert np.abs(np.subtract(item["rgb"], scene.model.geom_rgba[geoms[0], :3])).max() < 0.35


def test_a_glyph_drawn_for_a_mesh_is_refused(scene):
    draw = draw_look(load_look("randomized"), look_seed(0, "randomized", 0, 0), look_targets(scene))
    draw["blocks"]["cup"]["glyph"] = "A"
    with pytest.raises(LookError, match="'cup' is not a box"):
        look_scene(scene, draw)
