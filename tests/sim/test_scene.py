import sys
import types

import mujoco
import numpy as np
import pytest

from demoforge.errors import SimError
from demoforge.sim import ROBOT_PREFIX, Box, Cylinder, MeshProp, build_scene, default_scene, step


def test_default_scene_physics_names_and_cameras():
    scene = build_scene(default_scene())
    m = scene.model
    assert m.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC and m.opt.impratio == 10
    assert m.opt.timestep == pytest.approx(1 / 600)
    assert set(scene.cameras) == {"front", "side", "wrist"}
    assert m.camera(scene.cameras["wrist"]).name == "robot/wrist"
    robot_names = {m.body(int(b)).name for b in scene.robot.body_ids}
    assert robot_names and all(n.startswith(ROBOT_PREFIX) for n in robot_names)
    assert not {"red", "green", "blue", "table"} & robot_names
    floor = m.geom("floor").id
    assert m.geom_size[floor][0] > 0  # finite floor: a 0 size is MuJoCo's infinite plane


def test_fast_and_quality_looks():
    fast = build_scene(default_scene()).model
    quality = build_scene(default_scene(look="quality")).model
    assert fast.vis.quality.offsamples == 0 and not fast.light_castshadow.any()
    assert quality.vis.quality.offsamples == 4 and quality.vis.quality.shadowsize == 4096
    assert quality.light_castshadow[quality.light("key").id]


def test_props_settle_on_the_table():
    spec = default_scene(props=(
        Box("cube", (0.04, 0.04, 0.04), (0.5, 0.0, 0.43)),
        Cylinder("can", 0.03, 0.1, (0.5, 0.2, 0.46)),
    ))
    scene = build_scene(spec)
    step(scene, 900)
    top = spec.table.height
    assert scene.data.body("cube").xpos[2] == pytest.approx(top + 0.02, abs=1e-3)
    assert scene.data.body("can").xpos[2] == pytest.approx(top + 0.05, abs=1e-3)
    assert np.abs(scene.data.qvel).max() < 1e-2  # at rest, not jittering


def test_glyph_box_has_a_six_face_texture():
    scene = build_scene(default_scene(props=(Box("die", (0.05,) * 3, (0.5, 0, 0.425), glyphs=True),)))
    m = scene.model
    mat = m.geom_matid[m.geom("die").id]
    tex = m.mat_texid[mat][mujoco.mjtTextureRole.mjTEXROLE_RGB]
    assert m.tex_type[tex] == mujoco.mjtTexture.mjTEXTURE_CUBE
    assert m.tex_height[tex] == 6 * m.tex_width[tex]
    size = m.tex_width[tex] ** 2 * 3
    faces = m.tex_data[m.tex_adr[tex]: m.tex_adr[tex] + 6 * size].reshape(6, size)
    assert len({f.tobytes() for f in faces}) == 6  # every face differs


def test_invalid_specs_report_every_problem():
    spec = default_scene(
        props=(Box("dup", (0.04, 0.0, 0.04), (0.5, 0, 0.42)), Box("dup", (0.04,) * 3, (0.5, 0.1, 0.42)),
               Box("robot/x", (0.04,) * 3, (0.5, 0.2, 0.42))),
        look="cinematic",
    )
    with pytest.raises(SimError) as err:
        build_scene(spec)
    msg = str(err.value)
    assert "'dup' is used more than once" in msg
    assert "props[0] ('dup').size must be > 0" in msg
    assert "props[2] ('robot/x'): name is reserved" in msg
    assert "look 'cinematic'" in msg


def _tetra():
    v = np.array([[0, 0, 0], [0.06, 0, 0], [0, 0.06, 0], [0, 0, 0.06]], float)
    f = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    return v, f


def test_mesh_prop_pieces_become_geoms(monkeypatch):
    try:
        import demoforge.sim.decompose  # noqa: F401  (the real module, when present)
    except ImportError:  # stand-in with the agreed signature, for method "none" only
        fake = types.ModuleType("demoforge.sim.decompose")
        fake.convex_pieces = lambda v, f, *, method="coacd", cache_dir=None: [(v, f)]
        monkeypatch.setitem(sys.modules, "demoforge.sim.decompose", fake)
    v, f = _tetra()
    scene = build_scene(default_scene(props=(MeshProp("wedge", v, f, (0.5, 0, 0.45), decompose="none"),)))
    m = scene.model
    gid = m.geom("wedge_0").id
    assert m.geom_type[gid] == mujoco.mjtGeom.mjGEOM_MESH and m.geom_bodyid[gid] == m.body("wedge").id
    step(scene, 900)
    assert scene.data.body("wedge").xpos[2] == pytest.approx(0.4, abs=2e-3)  # resting on a face


def test_scene_mjspec_compiles_to_the_same_model_and_rebinds():
    import mujoco

    from demoforge.sim import build_scene, default_scene, scene_from_model, scene_mjspec

    spec = default_scene()
    a = build_scene(spec)
    model = scene_mjspec(spec).compile()
    b = scene_from_model(spec, model)
    assert a.model.nq == b.model.nq and a.model.nbody == b.model.nbody
    assert list(a.robot.arm_qpos) == list(b.robot.arm_qpos)
    mujoco.mj_step(a.model, a.data, 20)
    mujoco.mj_step(b.model, b.data, 20)
    assert (a.data.qpos == b.data.qpos).all()
