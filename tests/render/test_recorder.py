"""Fidelity: replayed poses equal the recorded ones, a draw gives the same pixels every time,
copies differ, and a recorded draw reproduces its frames."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from demoforge.dataset import open_dataset
from demoforge.raw.schema import SIM_STATE, STATE
from demoforge.render import (
    CameraRecorder, LookError, draw_look, load_look, look_scene, look_seed, look_targets, segmentation_colour,
)
from demoforge.replay import episode_scene, replay_states
from demoforge.sim import state_size


def _draw(scene, name="randomized", copy=0, episode=0):
    look = load_look(name)
    return draw_look(look, look_seed(0, look.name, episode, copy), look_targets(scene))


def test_replayed_poses_equal_the_recorded_ones_exactly(raw):
    scene = episode_scene(raw, 0)
    states = open_dataset(raw).read_episode(0, [SIM_STATE, STATE])
    reference = [(s.data.xpos.copy(), s.data.xquat.copy()) for s in replay_states(raw, 0, scene)]
    rendered = look_scene(scene, _draw(scene))
    n, nq = state_size(rendered.model), rendered.model.nq
    arm = rendered.robot.arm_qpos
    for t, s in enumerate(replay_states(raw, 0, rendered)):
        assert np.array_equal(s.data.qpos, states[SIM_STATE][t, 1:1 + nq])  # state row: time, qpos, ...
        assert np.array_equal(s.data.xpos, reference[t][0]) and np.array_equal(s.data.xquat, reference[t][1])
        assert np.array_equal(s.data.qpos[arm].astype(np.float32), states[STATE][t, :len(arm)])
    assert t == len(states[SIM_STATE]) - 1 and np.isnan(states[SIM_STATE][:, n:]).all()


def test_same_draw_same_pixels_and_copies_differ(raw):
    scene = episode_scene(raw, 0)
    draw = _draw(scene)
    with CameraRecorder(scene, draw, ("front", "wrist")) as a:
        first = [a.render() for _ in replay_states(raw, 0, a.scene)]
        a.bind(scene, _draw(scene, copy=1))  # the same GL context, another draw
        other = [a.render() for _ in replay_states(raw, 0, a.scene)]
    with CameraRecorder(scene, draw, ("front", "wrist")) as b:  # a fresh context
        again = [b.render() for _ in replay_states(raw, 0, b.scene)]
    for x, y, z in zip(first, again, other, strict=True):
        for key in x:
            assert np.array_equal(x[key], y[key])
            assert x[key].shape == (224, 224, 3) and x[key].dtype == np.uint8
    assert np.mean(np.abs(first[0]["observation.images.front"].astype(int) - other[0]["observation.images.front"])) > 5


def test_plain_look_keeps_the_scene_cameras_and_jitter_moves_them(raw):
    scene = episode_scene(raw, 0)
    plain = look_scene(scene, _draw(scene, "plain"))
    jittered = look_scene(scene, _draw(scene))
    for name, cam in scene.cameras.items():
        assert np.array_equal(plain.model.cam_pos[plain.cameras[name]], scene.model.cam_pos[cam])
        assert np.array_equal(plain.model.cam_fovy[plain.cameras[name]], scene.model.cam_fovy[cam])
        assert not np.array_equal(jittered.model.cam_pos[jittered.cameras[name]], scene.model.cam_pos[cam])
    assert plain.model.nlight == scene.model.nlight


def test_depth_and_segmentation(raw):
    scene = episode_scene(raw, 0)
    draw = _draw(scene, "plain")
    with CameraRecorder(scene, draw, ("front",), depth=True, segmentation=True) as rec:
        frames = rec.render_state(next(iter(open_dataset(raw).read_episode(0, [SIM_STATE]).values()))[0]
                                  [:state_size(rec.scene.model)])
        depth = rec.canvas.depth(rec.scene.data, rec.scene.cameras["front"])
        seg = rec.canvas.segmentation(rec.scene.data, rec.scene.cameras["front"])
        block = rec.scene.props["white"]
        pix = rec.scene.cameras["front"]
        uv, z = _project(rec, "white")
    assert set(frames) == {"observation.images.front", "observation.images.front_depth",
                           "observation.images.front_segmentation"}
    u, v = int(uv[0]), int(uv[1])
    # the block centre is in front of its visible face: rendered depth a little less than the centre's
    assert 0.0 < z - depth[v, u] < 0.05
    assert seg[v, u] == block
    assert tuple(frames["observation.images.front_segmentation"][v, u]) == segmentation_colour(block)
    assert frames["observation.images.front_depth"].dtype == np.float32
    assert np.array_equal(frames["observation.images.front_depth"], depth)
    assert rec.features()["observation.images.front_depth"].shape == (224, 224, 1)
    assert pix is not None


def _project(rec, body):
    name = "front"
    intr_fy = (rec.height / 2) / np.tan(np.deg2rad(rec.scene.model.cam_fovy[rec.scene.cameras[name]]) / 2)
    from demoforge.sim import Intrinsics, project, world_T_camera

    intr = Intrinsics(intr_fy, intr_fy, rec.width / 2, rec.height / 2, rec.width, rec.height)
    uv, z = project(rec.scene.data.xpos[rec.scene.props[body]], intr,
                    world_T_camera(rec.scene.data, rec.scene.cameras[name]))
    return uv[0], z[0]


def test_glyph_letters_are_drawn_on_the_blocks(raw):
    scene = episode_scene(raw, 0)
    draw = _draw(scene)
    model = look_scene(scene, draw).model
    tex = model.texture("look/white").id
    pixels = model.tex_data[model.tex_adr[tex]:model.tex_adr[tex] + model.tex_width[tex] * model.tex_height[tex] * 3]
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) == 2  # face colour and ink
    assert draw["blocks"]["white"]["glyph"] in "ABCDEFGHJKLM"


def test_unknown_camera_is_refused(raw):
    scene = episode_scene(raw, 0)
    with pytest.raises(LookError, match=r"cameras \['top'\] are not in the scene; cameras: \['front', 'side', 'wrist'\]"):
        CameraRecorder(scene, _draw(scene, "plain"), ("front", "top"))
    with pytest.raises(LookError, match="top"):  # and with no known camera at all
        CameraRecorder(scene, _draw(scene, "plain"), ("top",))


def _texture(model, name: str) -> np.ndarray:
    tex = model.texture(name).id
    return model.tex_data[model.tex_adr[tex]:model.tex_adr[tex] + model.tex_width[tex] * model.tex_height[tex] * 3]


def test_the_plain_look_shows_the_sidecar_letters_on_the_blocks(raw):
    from demoforge.sim.glyphs import glyph_atlas

    scene = episode_scene(raw, 0)
    letters = {p.name: p.letter for p in scene.spec.props if p.name in look_targets(scene).blocks}
    assert letters and all(letters.values())  # the task scene carries its sidecar's glyphs
    model = look_scene(scene, _draw(scene, "plain")).model
    for name, letter in letters.items():
        rgba = next(p.rgba for p in scene.spec.props if p.name == name)
        assert np.array_equal(_texture(model, f"{name}_glyphs"), glyph_atlas(rgba, letter).reshape(-1))


def test_shade_only_looks_redraw_the_scene_faces_in_the_new_colour(raw):
    from demoforge.render import look_from_dict
    from demoforge.sim.glyphs import glyph_atlas

    scene = episode_scene(raw, 0)
    look = look_from_dict({"name": "shade", "blocks": {"shade_jitter": 0.3}})
    draw = draw_look(look, look_seed(0, "shade", 0, 0), look_targets(scene))
    model = look_scene(scene, draw).model
    letter = next(p.letter for p in scene.spec.props if p.name == "white")
    assert np.array_equal(_texture(model, "look/white"), glyph_atlas(draw["blocks"]["white"]["rgb"], letter).reshape(-1))
    assert draw["blocks"]["white"]["glyph"] is None and draw["blocks"]["white"]["rgb"] != [0.95, 0.95, 0.95]


def test_inline_recording_of_a_stepped_scene_matches_the_replay(raw):
    """How execution records videos while generating: snapshot the stepped scene, render_state."""
    from demoforge.sim import snapshot

    physics = episode_scene(raw, 0)  # stands for the env execution steps
    draw = _draw(physics)
    replayed = []
    with CameraRecorder(physics, draw, ("front", "wrist")) as rec:
        for _ in replay_states(raw, 0, rec.scene):
            replayed.append(rec.render())
        inline = [rec.render_state(snapshot(s.model, s.data)) for s in replay_states(raw, 0, physics)]
    for a, b in zip(replayed, inline, strict=True):
        assert all(np.array_equal(a[k], b[k]) for k in a)


def test_a_look_sets_camera_pose_fovy_and_image_size(raw):
    from demoforge.render import look_from_dict
    from demoforge.sim import look_at_quat

    scene = episode_scene(raw, 0)
    pos, target = [0.9, 0.2, 0.9], [0.3, 0.0, 0.4]
    look = look_from_dict({"name": "framed", "cameras": {
        "front": {"pos": pos, "target": target, "fovy": 55, "width": 128, "height": 96}}})
    draw = draw_look(look, look_seed(0, look.name, 0, 0), look_targets(scene))
    assert draw["cameras"]["front"]["image"] == [128, 96] and "wrist" not in draw["cameras"]
    with CameraRecorder(scene, draw, ("front", "wrist")) as rec:
        cam = rec.scene.cameras["front"]
        np.testing.assert_allclose(rec.scene.model.cam_pos[cam], pos)
        np.testing.assert_allclose(rec.scene.model.cam_quat[cam], look_at_quat(pos, target))
        assert rec.scene.model.cam_fovy[cam] == 55.0
        frames = rec.render()
        assert rec.features()["observation.images.front"].shape == (96, 128, 3)
    assert frames["observation.images.front"].shape == (96, 128, 3)
    assert frames["observation.images.wrist"].shape == (224, 224, 3)
    # the aimed-at point is the image centre: the table there, not the sky
    assert frames["observation.images.front"][48, 64].sum() > 60


def test_drawn_block_finish_reaches_the_render_model(raw):
    scene = episode_scene(raw, 0)
    draw = _draw(scene)
    model = look_scene(scene, draw).model
    for name, item in draw["blocks"].items():
        mat = model.geom_matid[model.geom(name).id]
        assert model.mat_specular[mat] == pytest.approx(item["specular"], abs=1e-6)
        assert model.mat_shininess[mat] == pytest.approx(item["shininess"], abs=1e-6)


def test_the_key_lights_shadow_map_covers_the_table_only(raw):
    from demoforge.render.apply import SHADOW_HALF_M

    scene = episode_scene(raw, 0)
    for name in ("plain", "randomized"):
        model = look_scene(scene, _draw(scene, name)).model
        assert model.vis.map.shadowclip * model.stat.extent == pytest.approx(SHADOW_HALF_M, rel=1e-5)
        key = int(np.flatnonzero(model.light_castshadow)[0])
        assert model.light_castshadow.sum() == 1
        pos, d = model.light_pos[key], model.light_dir[key] / np.linalg.norm(model.light_dir[key])
        centre = np.array([*scene.spec.table.center, scene.spec.table.height])
        assert np.linalg.norm(np.cross(centre - pos, d)) < 1e-6  # its axis passes through the table's centre


def test_the_floor_drawn_last_and_casting_no_shadow_gives_the_same_pixels(raw):
    """The canvas draws the floor (its own geom group) after everything else and keeps it out
    of the shadow map's depth pass (canvas._ground_options): under the shadowed plain look the
    frames equal those of MuJoCo's own order, where the floor comes first and casts."""
    scene = episode_scene(raw, 0)
    draw = _draw(scene, "plain")
    assert draw.get("shadow_map_px")
    frames = {}
    for split in (True, False):
        with CameraRecorder(scene, draw, ("front", "side")) as rec:
            assert rec.canvas._ground is not None
            if not split:
                rec.canvas._ground = None
            frames[split] = [rec.render() for _ in replay_states(raw, 0, rec.scene)]
    for a, b in zip(frames[True], frames[False], strict=True):
        for key in a:
            assert np.array_equal(a[key], b[key]), key


def test_a_floor_sharing_its_group_is_drawn_in_one_go():
    from demoforge.render.canvas import _ground_options

    shared = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><geom type="plane" size="1 1 .1"/><geom type="box" size=".1 .1 .1"/></worldbody></mujoco>')
    own = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><geom type="plane" size="1 1 .1" group="1"/><geom type="box" size=".1 .1 .1"/>'
        '</worldbody></mujoco>')
    tilted = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><geom type="plane" size="1 1 .1" group="1" euler="0 90 0"/></worldbody></mujoco>')
    assert _ground_options(shared) is None and _ground_options(tilted) is None
    rest, ground = _ground_options(own)
    assert list(rest.geomgroup) == [1, 0, 1, 0, 0, 0] and list(ground.geomgroup) == [0, 1, 0, 0, 0, 0]


def test_a_capsule_mesh_is_closed_outward_and_on_the_capsule_surface():
    from collections import Counter

    from demoforge.render.apply import capsule_mesh

    radius, half = 0.05, 0.12
    v, n, f = capsule_mesh(radius, half, 12, 3)
    on_axis = np.zeros_like(v)
    on_axis[:, 2] = np.clip(v[:, 2], -half, half)
    np.testing.assert_allclose(np.linalg.norm(v - on_axis, axis=1), radius, atol=1e-12)
    np.testing.assert_allclose(n, (v - on_axis) / radius, atol=1e-12)  # the true surface's normals
    edges = Counter(tuple(sorted(e)) for a, b, c in f.tolist() for e in ((a, b), (b, c), (c, a)))
    assert set(edges.values()) == {2}  # closed: every edge between two triangles
    normal = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    assert (np.sum(normal * v[f].mean(axis=1), axis=1) > 0).all()  # wound outward (convex, origin inside)
    assert len(f) < 12 * 6 * 2 + 2 * 12 * 3 * 2  # fewer than MuJoCo's capsule at 12 x 6 (straight part in 6 bands)


def test_the_render_copy_draws_capsules_as_meshes_on_the_same_surface_out_of_collisions(raw):
    scene = episode_scene(raw, 0)
    rendered = look_scene(scene, _draw(scene))
    base, m = scene.model, rendered.model
    rendered.data.qpos[:] = scene.data.qpos
    mujoco.mj_forward(base, scene.data)
    mujoco.mj_forward(m, rendered.data)
    capsules = np.flatnonzero(base.geom_type == mujoco.mjtGeom.mjGEOM_CAPSULE)
    assert len(capsules) >= 4  # the arm's links
    for g in capsules:
        assert m.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH and m.geom_contype[g] == m.geom_conaffinity[g] == 0
        mesh = m.geom_dataid[g]
        local = m.mesh_vert[m.mesh_vertadr[mesh]:m.mesh_vertadr[mesh] + m.mesh_vertnum[mesh]]
        world = rendered.data.geom_xpos[g] + local @ rendered.data.geom_xmat[g].reshape(3, 3).T
        centre, axis = scene.data.geom_xpos[g], scene.data.geom_xmat[g].reshape(3, 3)[:, 2]
        radius, half = base.geom_size[g][:2]
        along = np.clip((world - centre) @ axis, -half, half)
        np.testing.assert_allclose(np.linalg.norm(world - centre - along[:, None] * axis, axis=1), radius, atol=1e-5)
        assert np.isclose(((world - centre) @ axis).max(), half + radius, atol=1e-5)  # the caps reach the ends
