"""Camera tuning: the world axes drawn where the camera model projects them, frustum outlines
that meet the table where the image corners look, and `look-sheet --axes` with its overview."""

import av
import numpy as np
import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.render.axes import AXES_RGB, FAR_M, FRUSTUM_RGB, draw_axes, draw_segments, frustum_segments
from demoforge.sim import CameraRig, Intrinsics, build_scene, default_scene, intrinsics, project, world_T_camera

SIZE = 224


@pytest.fixture(scope="module")
def scene():
    return build_scene(default_scene())


def _camera(scene, name):
    cam = scene.cameras[name]
    return intrinsics(scene.model, cam, SIZE, SIZE), world_T_camera(scene.data, cam)


@pytest.mark.parametrize("name", ["front", "side", "wrist"])
def test_frustum_corners_lie_on_the_image_corners_and_on_the_table_or_far(scene, name):
    intr, pose = _camera(scene, name)
    table_z = scene.spec.table.height
    segments = frustum_segments(intr, pose, table_z)
    assert len(segments) == 8 and all(np.array_equal(s[0], pose[:3, 3]) for s in segments[:4])
    corners = np.stack([s[1] for s in segments[:4]])
    uv, depth = project(corners, intr, pose)
    np.testing.assert_allclose(uv, [[0, 0], [SIZE, 0], [SIZE, SIZE], [0, SIZE]], atol=1e-6)
    assert (depth > 0).all()
    for corner in corners:
        on_table = abs(corner[2] - table_z) < 1e-9
        assert on_table or abs(np.linalg.norm(corner - pose[:3, 3]) - FAR_M) < 1e-9
    if name == "wrist":  # it looks down at the table: every ray meets it
        np.testing.assert_allclose(corners[:, 2], table_z)


def test_axes_are_drawn_in_their_colours_where_they_project_and_nothing_else_changes(scene):
    intr, pose = _camera(scene, "front")
    with CameraRig(scene.model, scene.cameras, width=SIZE, height=SIZE) as rig:
        image = rig.rgb(scene.data, "front")
    drawn = draw_axes(image, intr, pose)
    for k in range(3):
        uv, _ = project(np.eye(3)[k] * 0.3, intr, pose)  # a point on axis k, inside the image
        u, v = int(uv[0, 0]), int(uv[0, 1])
        assert 0 <= u < SIZE and 0 <= v < SIZE
        assert tuple(drawn[v, u]) == AXES_RGB[k], (k, drawn[v, u])
    changed = (drawn != image).any(axis=2)
    assert 0 < changed.mean() < 0.05  # thin lines only
    assert not np.shares_memory(drawn, image)


def test_a_segment_behind_the_camera_is_not_drawn_and_one_crossing_it_is_cut():
    intr = Intrinsics(100.0, 100.0, 50.0, 50.0, 100, 100)
    pose = np.eye(4)  # at the origin, looking along -z
    blank = np.zeros((100, 100, 3), np.uint8)
    behind = draw_segments(blank, [((0, 0, 1.0), (0.2, 0, 2.0), (255, 0, 0))], intr, pose)
    assert not behind.any()
    crossing = draw_segments(blank, [((0.0, 0.0, -1.0), (0.1, 0.0, 1.0), (255, 0, 0))], intr, pose)
    lit = np.argwhere(crossing[..., 0] == 255)
    assert len(lit) > 0
    assert (lit[:, 1] >= 49).all()  # only the part in front: from the centre to the right, never wrapped left


def _read_png(path) -> np.ndarray:
    with av.open(str(path)) as container:
        return next(container.decode(video=0)).to_ndarray(format="rgb24")


def test_look_sheet_axes_adds_an_overview_of_each_cameras_frustum(tmp_path):
    args = ["look-sheet", "--look", "plain", "--draws", "1", "--columns", "1", "--cameras", "front,wrist",
            "--family", "pnp"]
    plain = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "plain.png")])
    axes = CliRunner().invoke(app, [*args, "--axes", "--out", str(tmp_path / "axes.png")])
    assert plain.exit_code == 0 and axes.exit_code == 0, plain.output + axes.output
    without, with_axes = _read_png(tmp_path / "plain.png"), _read_png(tmp_path / "axes.png")
    assert without.shape == (2 * SIZE + 2, SIZE, 3) and with_axes.shape == (3 * SIZE + 4, SIZE, 3)
    front = with_axes[:SIZE]
    assert (front == AXES_RGB[0]).all(axis=2).any() and (front == AXES_RGB[2]).all(axis=2).any()
    view = with_axes[2 * SIZE + 4:]
    for name in ("front", "wrist"):
        assert (view == FRUSTUM_RGB[name]).all(axis=2).sum() > 50, name
    assert not (view == FRUSTUM_RGB["side"]).all(axis=2).any()  # only the cameras of the sheet
    again = CliRunner().invoke(app, [*args, "--axes", "--out", str(tmp_path / "again.png")])
    assert again.exit_code == 0 and (tmp_path / "again.png").read_bytes() == (tmp_path / "axes.png").read_bytes()
