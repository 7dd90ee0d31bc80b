import numpy as np
import pytest

from demoforge.errors import SimError
from demoforge.sim import MATERIALS, Box, Material, build_scene, default_scene, material, material_problems, step


def test_presets_are_valid_at_the_default_timestep():
    assert {"steel", "wood", "plastic", "rubber", "foam"} <= set(MATERIALS)
    for mat in MATERIALS.values():
        assert material_problems(mat, timestep=1 / 600, where="m") == []


def test_unknown_preset_lists_the_presets():
    with pytest.raises(SimError, match="presets: .*'foam'.*'wood'"):
        material("granite")


def test_bad_custom_materials_are_all_reported_at_build_never_clamped():
    too_fast = Material("fast", (0.002, 1.0), (0.9, 0.95, 0.001, 0.5, 2.0), (1.0, 0.005, 0.0001), 500.0)
    inverted = Material("inv", (0.02, 0.0), (0.99, 0.9, 0.001, 0.5, 2.0), (1.0, 0.005, 0.0001), 500.0)
    outside = Material("out", (-0.01, 1.0), (0.0, 1.2, 0.001, 0.5, 2.0), (1.0, 0.005, 0.0001), 500.0)
    spec = default_scene(
        props=(Box("a", (0.04,) * 3, (0.5, 0, 0.42), material=too_fast),
               Box("b", (0.04,) * 3, (0.5, 0.1, 0.42), material=inverted)),
        material=outside,
    )
    with pytest.raises(SimError) as err:
        build_scene(spec)
    msg = str(err.value)
    assert "props[0] ('a').material.solref timeconst 0.002 s is below 2 x timestep" in msg
    assert "use timeconst >= 0.00333333" in msg  # the fix
    assert "props[1] ('b').material.solref dampratio must be > 0" in msg
    assert "props[1] ('b').material.solimp dmin (0.99) must be <= dmax (0.9)" in msg
    assert "material.solref timeconst must be > 0" in msg
    assert "material.solimp dmin must be in (0, 1), got 0.0" in msg
    assert "material.solimp dmax must be in (0, 1), got 1.2" in msg


def test_scene_default_and_per_prop_override_reach_the_model():
    spec = default_scene(
        props=(Box("plain", (0.04,) * 3, (0.5, 0, 0.42)),
               Box("grippy", (0.04,) * 3, (0.5, 0.1, 0.42), material="rubber")),
        material="steel",
    )
    model = build_scene(spec).model
    plain, grippy = model.geom("plain").id, model.geom("grippy").id
    np.testing.assert_allclose(model.geom_solref[plain], MATERIALS["steel"].solref)
    np.testing.assert_allclose(model.geom_friction[grippy], MATERIALS["rubber"].friction)
    np.testing.assert_allclose(model.geom_solimp[grippy], MATERIALS["rubber"].solimp)
    # Mass from density: a 4 cm steel cube weighs 0.502 kg.
    assert model.body_mass[model.body("plain").id] == pytest.approx(7850 * 0.04**3)


def test_foam_sinks_deeper_than_steel():
    def resting_depth(name):
        scene = build_scene(default_scene(props=(Box("c", (0.04,) * 3, (0.5, 0, 0.42), material=name),)))
        step(scene, 600)
        gid = scene.model.geom("c").id
        dists = [c.dist for c in scene.data.contact[: scene.data.ncon] if gid in (c.geom1, c.geom2)]
        return -min(dists)

    assert resting_depth("foam") > 3 * resting_depth("steel")
