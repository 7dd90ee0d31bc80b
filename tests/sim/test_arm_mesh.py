"""The mesh arm: Franka's link meshes drawn on the built-in Panda in a render-only copy, with the
primitive arm's bodies, geom ids, masses and poses (skipped without gymnasium-robotics:
`pip install 'demoforge[mesh-arm]'`)."""

from __future__ import annotations

import importlib.util

import mujoco
import numpy as np
import pytest

from demoforge.sim import build_scene
from demoforge.sim.arm_mesh import LINK_MESHES, MeshArmError, dress_panda, panda_mesh_dir
from demoforge.sim.scene import ROBOT_PREFIX, SceneSpec, scene_mjspec

needs_meshes = pytest.mark.skipif(importlib.util.find_spec("gymnasium_robotics") is None,
                                  reason="the mesh arm needs gymnasium-robotics (pip install 'demoforge[mesh-arm]')")
# How far a link mesh's vertices lie outside the primitive arm (any of its geoms), 90th
# percentile [m], as measured with the meshes in place, plus 1 cm: a mesh in the wrong frame
# (a link turned a quarter about its joint, or shifted) leaves the arm by more.
P90_M = {"link0": 0.073, "link1": 0.067, "link2": 0.067, "link3": 0.055, "link4": 0.063, "link5": 0.077,
         "link6": 0.045, "link7": 0.044, "hand": 0.040, "finger1": 0.017, "finger2": 0.017}


def _outside(model: mujoco.MjModel, data: mujoco.MjData, points: np.ndarray, geom: int) -> np.ndarray:
    """Distance of world `points` (N, 3) outside primitive `geom` [m] (negative: inside)."""
    local = (points - data.geom_xpos[geom]) @ data.geom_xmat[geom].reshape(3, 3)
    kind, size = model.geom_type[geom], model.geom_size[geom]
    if kind == mujoco.mjtGeom.mjGEOM_CAPSULE:
        axis = np.zeros_like(local)
        axis[:, 2] = np.clip(local[:, 2], -size[1], size[1])
        return np.linalg.norm(local - axis, axis=1) - size[0]
    if kind == mujoco.mjtGeom.mjGEOM_SPHERE:
        return np.linalg.norm(local, axis=1) - size[0]
    if kind == mujoco.mjtGeom.mjGEOM_CYLINDER:
        return np.maximum(np.linalg.norm(local[:, :2], axis=1) - size[0], np.abs(local[:, 2]) - size[1])
    return np.max(np.abs(local) - size[:3], axis=1)  # box


@pytest.fixture(scope="module")
def dressed():
    scene = build_scene(SceneSpec())
    mj = scene_mjspec(scene.spec)
    dress_panda(mj, scene.model, ROBOT_PREFIX)
    return scene, mj.compile()


@needs_meshes
def test_meshes_replace_the_primitives_in_place_and_keep_the_physics(dressed):
    scene, model = dressed
    base = scene.model
    for attr in ("nq", "nv", "nu", "nbody", "ngeom", "njnt"):
        assert getattr(model, attr) == getattr(base, attr), attr
    assert np.array_equal(model.body_mass, base.body_mass) and np.array_equal(model.body_inertia, base.body_inertia)
    for name in LINK_MESHES:
        geom = model.body_geomadr[model.body(ROBOT_PREFIX + name).id]
        assert model.geom_type[geom] == mujoco.mjtGeom.mjGEOM_MESH and model.geom_bodyid[geom] == base.geom_bodyid[geom]
        assert model.geom_contype[geom] == model.geom_conaffinity[geom] == 0
    others = [g for g in range(base.ngeom) if model.geom_type[g] == base.geom_type[g]]
    assert len(others) == base.ngeom - len(LINK_MESHES)  # only the arm's geoms changed
    data = mujoco.MjData(model)
    data.qpos[:] = scene.data.qpos
    mujoco.mj_forward(model, data)
    assert np.array_equal(data.xpos, scene.data.xpos) and np.array_equal(data.xquat, scene.data.xquat)


@needs_meshes
@pytest.mark.parametrize("pose", ["home", "reach", "twist"])
def test_each_link_mesh_sits_on_the_primitive_arm(dressed, pose):
    scene, model = dressed
    base, data = scene.model, mujoco.MjData(scene.model)
    mesh_data = mujoco.MjData(model)
    data.qpos[:] = scene.data.qpos
    arm = [base.joint(f"{ROBOT_PREFIX}joint{i}").qposadr[0] for i in range(1, 8)]
    data.qpos[arm] += {"home": np.zeros(7), "reach": [0.5, 0.6, -0.3, 0.8, 0.4, -0.5, 1.0],
                       "twist": [-0.9, -0.3, 1.2, 0.3, -1.5, 0.6, -2.0]}[pose]
    mesh_data.qpos[:] = data.qpos
    mujoco.mj_forward(base, data)
    mujoco.mj_forward(model, mesh_data)
    primitives = [base.body_geomadr[base.body(ROBOT_PREFIX + name).id] for name in LINK_MESHES]
    for name in LINK_MESHES:
        geom = model.body_geomadr[model.body(ROBOT_PREFIX + name).id]
        mesh = model.geom_dataid[geom]
        verts = model.mesh_vert[model.mesh_vertadr[mesh]:model.mesh_vertadr[mesh] + model.mesh_vertnum[mesh]]
        world = mesh_data.geom_xpos[geom] + verts @ mesh_data.geom_xmat[geom].reshape(3, 3).T
        outside = np.min([_outside(base, data, world, g) for g in primitives], axis=0)
        assert np.percentile(outside, 90) <= P90_M[name], (name, np.percentile(outside, 90))


def test_without_the_meshes_the_error_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "gymnasium_robotics" else real(name, *a))
    with pytest.raises(MeshArmError, match=r"pip install 'demoforge\[mesh-arm\]'"):
        panda_mesh_dir()
    from demoforge.render import LookError, look_from_dict

    with pytest.raises(LookError, match=r"m.yaml.arm: 'mesh': .*demoforge\[mesh-arm\].*or `arm: primitives`"):
        look_from_dict({"name": "m", "arm": "mesh"}, where="m.yaml")
    with pytest.raises(LookError, match=r"arm: 'meshes' is not one of \['primitives', 'mesh'\]"):
        look_from_dict({"name": "m", "arm": "meshes"}, where="m.yaml")
    assert look_from_dict({"name": "m"}).arm == "primitives"


@needs_meshes
def test_only_the_built_in_arm_is_dressed():
    spec = mujoco.MjSpec()
    body = spec.worldbody.add_body(name=f"{ROBOT_PREFIX}link0")
    body.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.05, 0, 0])
    with pytest.raises(MeshArmError, match="not the built-in Panda"):
        dress_panda(spec, spec.compile(), ROBOT_PREFIX)
