import numpy as np
import pytest

from demoforge.errors import SimError
from demoforge.sim import CameraRig, build_scene, default_scene, intrinsics, step
from demoforge.sim import cameras as cameras_module
from tests.timeouts import WAIT_S


@pytest.fixture(scope="module")
def rig_scene():
    scene = build_scene(default_scene())
    step(scene, 60)
    rig = CameraRig(scene.model, scene.cameras, width=224, height=224)
    yield rig, scene
    rig.close()


def test_rgb_depth_segmentation_shapes(rig_scene):
    rig, scene = rig_scene
    rgb = rig.rgb(scene.data, "front")
    depth = rig.depth(scene.data, "front")
    seg = rig.segmentation(scene.data, "front")
    assert rgb.shape == (224, 224, 3) and rgb.dtype == np.uint8 and rgb.std() > 5
    assert depth.shape == (224, 224) and depth.dtype == np.float32 and 0.3 < np.median(depth) < 5
    assert seg.shape == (224, 224) and seg.dtype == np.int32
    assert set(scene.props.values()) <= set(np.unique(seg).tolist())


@pytest.mark.parametrize("camera", ["front", "side", "wrist"])
def test_projected_body_positions_land_on_their_pixels(rig_scene, camera):
    rig, scene = rig_scene
    seg = rig.segmentation(scene.data, camera)
    depth = rig.depth(scene.data, camera)
    checked = 0
    for name, body in scene.props.items():
        uv, z = rig.project(scene.data, camera, scene.data.xpos[body])
        u, v = np.floor(uv[0]).astype(int)
        if not (0 <= u < 224 and 0 <= v < 224):
            continue  # framing is test_camera_framing's; the close front view leaves out the outer cubes
        checked += 1
        assert seg[v, u] == body, (camera, name, seg[v, u])
        # The centre lies inside the cube, at most half a diagonal behind the visible surface.
        assert 0 < z[0] - depth[v, u] < 0.035
    assert checked >= 1


def test_intrinsics_and_extrinsics(rig_scene):
    rig, scene = rig_scene
    intr = rig.intrinsics("front")
    half_fovy = np.deg2rad(scene.spec.cameras[0].fovy) / 2
    assert intr.fy == pytest.approx(112 / np.tan(half_fovy))
    assert (intr.cx, intr.cy) == (112.0, 112.0)
    assert intrinsics(scene.model, scene.cameras["front"], 320, 240).fx == pytest.approx(120 / np.tan(half_fovy))
    pose = rig.world_T_camera(scene.data, "front")
    spec_cam = scene.spec.cameras[0]
    np.testing.assert_allclose(pose[:3, 3], spec_cam.pos, atol=1e-9)
    view = np.subtract(spec_cam.target, spec_cam.pos)
    np.testing.assert_allclose(-pose[:3, 2], view / np.linalg.norm(view), atol=1e-9)
    # The aimed-at point projects to the image centre.
    uv, _ = rig.project(scene.data, "front", spec_cam.target)
    np.testing.assert_allclose(uv[0], [112, 112], atol=1e-6)


def test_unknown_camera_lists_cameras(rig_scene):
    rig, scene = rig_scene
    with pytest.raises(SimError, match="cameras: \\['front', 'side', 'wrist'\\]"):
        rig.rgb(scene.data, "top")


def test_no_gl_backend_gives_the_install_fix(monkeypatch):
    def broken(backend):
        raise ImportError(f"cannot load {backend}")

    monkeypatch.setattr(cameras_module, "_gl_context_class", broken)
    monkeypatch.setenv("MUJOCO_GL", "egl")
    scene = build_scene(default_scene(props=()))
    with pytest.raises(SimError) as err:
        CameraRig(scene.model, scene.cameras)
    msg = str(err.value)
    assert "egl: cannot load egl" in msg and "osmesa: cannot load osmesa" in msg
    assert "apt-get install libegl1" in msg and "libosmesa6" in msg


def test_osmesa_either_renders_or_names_the_package(tmp_path):
    import os
    import subprocess
    import sys

    code = (
        "from demoforge.errors import SimError\n"
        "from demoforge.sim import CameraRig, build_scene, default_scene\n"
        "s = build_scene(default_scene(props=()))\n"
        "try:\n"
        "    rig = CameraRig(s.model, s.cameras, width=32, height=32)\n"
        "    print('backend', rig.backend, rig.rgb(s.data, 'front').shape)\n"
        "    rig.close()\n"
        "except SimError as exc:\n"
        "    print('error', exc)\n"
    )
    env = {**os.environ, "MUJOCO_GL": "osmesa", "PYOPENGL_PLATFORM": "osmesa"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=WAIT_S)
    assert out.returncode == 0, out.stderr
    line = out.stdout.strip().splitlines()[-1]
    if line.startswith("backend"):
        assert line == "backend osmesa (32, 32, 3)"
    else:
        assert "MUJOCO_GL=osmesa and no library for osmesa (libOSMesa)" in line and "apt-get install libosmesa6" in line
