"""Apply a look draw to a scene: a render-only copy of its model with the draw's lights, sky,
floor, table, blocks, arm meshes, cameras and framebuffer.

The copy is compiled from the scene's own `SceneSpec` with visual elements edited (lights,
textures, materials, colours); nothing that moves changes, and this is checked: the copy has
the scene's degrees of freedom and state size, so a recorded state restores into it exactly.
Capsules are drawn as meshes of the same surface (`capsule_mesh`), kept out of collisions: the
copy is only posed and drawn, never stepped. Camera poses and fields of view start from the
scene's compiled model (which may carry a physics randomization's camera offsets) and the
draw's offsets are added.
"""

from __future__ import annotations

import mujoco
import numpy as np

from demoforge.errors import SimError
from demoforge.render import photos, textures
from demoforge.render.look import LookError
from demoforge.render.sample import LookTargets, loads_look_draw
from demoforge.sim import Box, Scene, look_at_quat, scene_from_model, scene_mjspec, state_size
from demoforge.sim.arm_mesh import dress_panda
from demoforge.sim.glyphs import glyph_atlas
from demoforge.sim.scene import ROBOT_PREFIX

_BUILTIN = {"flat": mujoco.mjtBuiltin.mjBUILTIN_FLAT, "gradient": mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
            "checker": mujoco.mjtBuiltin.mjBUILTIN_CHECKER, "noise": mujoco.mjtBuiltin.mjBUILTIN_FLAT}
_TEX_SIZE = 128  # procedural texture side [px]


def image_size(draw: dict, camera: str) -> tuple[int, int]:
    """(width, height) [px] of camera `camera` under `draw`."""
    w, h = draw.get("cameras", {}).get(camera, {}).get("image", draw["image"])
    return int(w), int(h)


def max_image(draw: dict) -> tuple[int, int]:
    """The largest width and height [px] any camera of `draw` renders at (its framebuffer)."""
    sizes = [draw["image"]] + [c["image"] for c in draw.get("cameras", {}).values() if "image" in c]
    return max(int(w) for w, _ in sizes), max(int(h) for _, h in sizes)


def look_targets(scene: Scene) -> LookTargets:
    """The free props (blocks, and a task package's other objects) and cameras of `scene` that a look
    draw refers to."""
    free = [p for p in scene.spec.props if p.free]
    return LookTargets(blocks={p.name: tuple(float(c) for c in p.rgba[:3]) for p in free},
                       cameras=tuple(scene.cameras),
                       no_glyphs=frozenset(p.name for p in free if not isinstance(p, Box)))


def _photo(surface: dict, *, sky: bool) -> np.ndarray:
    ref = surface["image"]
    try:
        if photos.digest(ref) != surface["image_sha256"]:
            raise LookError(f"look draw: image {ref!r} changed since the draw was made (its pixels' hash is not "
                            f"{surface['image_sha256']}); restore it, or render with a new draw")
        return (photos.sky_image(ref, surface["rgb1"], surface["projection"]) if sky
                else photos.surface_image(ref, surface["rgb1"]))
    except photos.PhotoError as exc:
        raise LookError(f"look draw: image {ref!r}: {exc}") from None


def _texture(mj: mujoco.MjSpec, name: str, kind: mujoco.mjtTexture, surface: dict) -> str:
    if surface["texture"] in textures.KINDS or surface["texture"] == "image":
        if surface["texture"] == "image":
            image = _photo(surface, sky=kind == mujoco.mjtTexture.mjTEXTURE_SKYBOX)
        else:
            image = textures.texture_image(surface["texture"], surface["rgb1"], surface["rgb2"], surface["seed"])
        if kind == mujoco.mjtTexture.mjTEXTURE_SKYBOX and surface["texture"] != "image":
            # the same wall on every face, face 5 (the +y wall; meant as the floor side, kept so draws
            # render as before) darker
            faces = [image] * 6
            faces[5] = (image * 0.6).astype(np.uint8)
            image = np.concatenate(faces)
        tex = mj.add_texture(name=name, type=kind)
        tex.width, tex.height, tex.nchannel = image.shape[1], image.shape[0], 3
        tex.data = image.tobytes()
        return tex.name
    tex = mj.add_texture(name=name, type=kind, builtin=_BUILTIN[surface["texture"]], rgb1=surface["rgb1"],
                         rgb2=surface["rgb2"], width=_TEX_SIZE, height=_TEX_SIZE)
    if surface["texture"] == "noise":
        tex.mark = mujoco.mjtMark.mjMARK_RANDOM
        tex.random = 0.08
        tex.markrgb = surface["rgb2"]
    return tex.name


def _material(mj: mujoco.MjSpec, name: str, texture: str, surface: dict, *, uniform: bool) -> str:
    mat = mj.add_material(name=name)
    mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = texture
    mat.texrepeat = [surface["repeat"], surface["repeat"]]
    mat.texuniform = uniform
    mat.specular = surface["specular"]
    mat.shininess = surface["shininess"]
    return mat.name


def _surface_geom(mj: mujoco.MjSpec, geom: str, name: str, surface: dict) -> None:
    tex = _texture(mj, f"look/{name}", mujoco.mjtTexture.mjTEXTURE_2D, surface)
    g = mj.geom(geom)
    g.material = _material(mj, f"look/{name}", tex, surface, uniform=True)
    g.rgba = [1.0, 1.0, 1.0, 1.0]


def _blocks(mj: mujoco.MjSpec, blocks: dict, letters: dict[str, str | None]) -> None:
    for name in sorted(blocks):
        item = blocks[name]
        if name not in letters:  # a cylinder or mesh prop: every geom of its body in the drawn colour
            _recolour_body(mj, name, item)
            continue
        try:
            g = mj.geom(name)
        except (KeyError, ValueError):
            g = None
        if g is None:
            raise LookError(f"look draw: block {name!r} is not a geom of the scene")
        if item["glyph"] is None and not g.material:
            g.rgba = [*item["rgb"], 1.0]
        else:  # the draw's letter, or the scene's own faces (its letter or pips), in the drawn colour
            _block_material(mj, g, name, glyph_atlas(item["rgb"], item["glyph"] or letters.get(name)))
        if "specular" in item:
            mat = mj.material(g.material) if g.material else _block_material(mj, g, name, None, rgb=item["rgb"])
            mat.specular, mat.shininess = item["specular"], item["shininess"]


def _recolour_body(mj: mujoco.MjSpec, name: str, item: dict) -> None:
    body = mj.body(name)
    if body is None:
        raise LookError(f"look draw: object {name!r} is not a body of the scene")
    if item["glyph"] is not None:
        raise LookError(f"look draw: object {name!r} is not a box; a glyph is drawn on a box only")
    for g in body.geoms:
        g.rgba = [*item["rgb"], 1.0]  # a geom's own colour wins over its material's
        if "specular" in item:  # a material of its own per geom: one the scene shares would change others
            mat = _block_material(mj, g, g.name, None, rgb=item["rgb"])
            mat.specular, mat.shininess = item["specular"], item["shininess"]


def _block_material(mj: mujoco.MjSpec, g, name: str, atlas: np.ndarray | None, *, rgb=None):
    mat = mj.add_material(name=f"look/{name}")
    if atlas is not None:
        tex = mj.add_texture(name=f"look/{name}", type=mujoco.mjtTexture.mjTEXTURE_CUBE)
        tex.width, tex.height, tex.nchannel = atlas.shape[1], atlas.shape[0], 3
        tex.data = atlas.tobytes()
        mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = tex.name
        g.rgba = [1.0, 1.0, 1.0, 1.0]
    else:
        mat.rgba = [*rgb, 1.0]
    g.material = mat.name
    return mat


def _lights(mj: mujoco.MjSpec, lights: dict) -> None:
    for light in list(mj.lights):
        mj.delete(light)
    for i, item in enumerate(lights["lights"]):
        d = np.asarray(item["dir"])
        mj.worldbody.add_light(name=f"look/light{i}", pos=list(-2.0 * d + [0.4, 0.0, 0.4]), dir=list(d),
                               diffuse=item["diffuse"], castshadow=False,
                               type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL)
    mj.visual.headlight.ambient = [lights["ambient"]] * 3
    mj.visual.headlight.diffuse = [lights["headlight"]] * 3


SHADOW_HALF_M = 0.75  # half side of the square the key light's shadow map covers around the table [m]


def _shadows(mj: mujoco.MjSpec, map_px: int, table) -> None:
    # One shadow-casting light keeps the cost to one extra depth pass per frame. MuJoCo fits a
    # directional light's shadow map to a square of +-shadowclip * extent [m] around the light's
    # axis; the floor makes the extent ~1.9 m, so the key light is re-aimed through the table's
    # centre (a directional light's position only places its shadow map) and the square is cut
    # to the table and arm (see look_scene): 3.9 mm per texel at 384 px instead of 7.5 mm at 512 px.
    lights = list(mj.lights)
    if not lights:
        raise LookError("look draw: shadow_map_px is set but the scene has no light to cast shadows")
    for i, light in enumerate(lights):
        light.castshadow = i == 0
    d = np.asarray(lights[0].dir, float)
    lights[0].pos = [*table.center, table.height] - 2.0 * d / np.linalg.norm(d)
    mj.visual.quality.shadowsize = map_px


def _quat_mul_rotvec(quat: np.ndarray, rotvec) -> np.ndarray:
    r = np.asarray(rotvec, float)
    angle = float(np.linalg.norm(r))
    if angle == 0.0:
        return quat.copy()
    dq = np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * r / angle])
    out = np.empty(4)
    mujoco.mju_mulQuat(out, quat, dq)  # the offset turns the camera in its own frame
    return out


def capsule_mesh(radius: float, half_length: float, slices: int, rings: int) -> tuple[np.ndarray, ...]:
    """(vertices (V, 3), unit normals (V, 3), outward triangles (F, 3)) of a capsule along z
    [m]: `slices` around, `rings` bands per cap, the straight part in one band; the normals
    are the true surface's, so the shading runs on from the caps into the straight part."""
    lats = [np.pi / 2 * (1 - k / rings) for k in range(1, rings + 1)]  # near the pole .. the equator
    ring_normals = [(np.cos(lat) * np.cos(t), np.cos(lat) * np.sin(t), sign * np.sin(lat))
                    for sign, order in ((1, lats), (-1, lats[::-1])) for lat in order
                    for t in 2 * np.pi * np.arange(slices) / slices]
    normals = np.array([(0.0, 0.0, 1.0), *ring_normals, (0.0, 0.0, -1.0)])
    centre = np.zeros_like(normals)
    centre[: 1 + rings * slices, 2], centre[1 + rings * slices:, 2] = half_length, -half_length
    vertices = centre + radius * normals
    top, bottom = 0, len(normals) - 1
    rows = 1 + np.arange(2 * rings)[:, None] * slices + np.arange(slices)  # vertex index of each ring
    nxt = np.roll(np.arange(slices), -1)
    faces = [np.column_stack([np.full(slices, top), rows[0], rows[0][nxt]]),
             np.column_stack([np.full(slices, bottom), rows[-1][nxt], rows[-1]])]
    for a, b in zip(rows[:-1], rows[1:]):
        faces += [np.column_stack([a, b, b[nxt]]), np.column_stack([a, b[nxt], a[nxt]])]
    return vertices, normals, np.concatenate(faces)


def _capsules_as_meshes(mj: mujoco.MjSpec) -> None:
    # MuJoCo draws a capsule's straight part in `numstacks` bands. Every light of a look is
    # directional, so along a straight line of the surface only the specular changes, and those
    # bands roughly double the capsule's triangles in each of the three passes a shadowed frame
    # makes: as meshes the arm costs 0.4 ms less per two-camera 224 px frame (of 4.6), with the
    # same caps and silhouette (mean pixel difference 0.09 of 255). Textured capsules keep
    # MuJoCo's texture mapping.
    quality = mj.visual.quality
    slices, rings = int(quality.numslices), max(1, int(quality.numstacks) // 2)
    capsules = [g for g in mj.geoms if g.type == mujoco.mjtGeom.mjGEOM_CAPSULE and not g.material]
    for k, g in enumerate(capsules):
        radius, half = float(g.size[0]), float(g.size[1])
        ends = np.asarray(g.fromto, float)
        if not np.isnan(ends[0]):  # placed by its end points: the same frame as the compiler gives it
            axis = ends[3:] - ends[:3]
            half = float(np.linalg.norm(axis)) / 2
            quat = np.empty(4)
            mujoco.mju_quatZ2Vec(quat, axis / (2 * half))
            g.pos, g.quat, g.fromto = ((ends[:3] + ends[3:]) / 2).tolist(), quat.tolist(), [np.nan] * 6
        vertices, normals, faces = capsule_mesh(radius, half, slices, rings)
        mesh = mj.add_mesh(name=f"look/capsule{k}")
        mesh.uservert, mesh.usernormal = vertices.ravel().tolist(), normals.ravel().tolist()
        mesh.userface = mesh.userfacenormal = faces.ravel().tolist()
        g.type, g.meshname, g.contype, g.conaffinity = mujoco.mjtGeom.mjGEOM_MESH, mesh.name, 0, 0


def look_scene(scene: Scene, draw: dict) -> Scene:
    """A render-only copy of `scene` under `draw` (a `draw_look` result), reset to home."""
    draw = loads_look_draw(draw)
    mj = scene_mjspec(scene.spec)
    width, height = max_image(draw)
    g = mj.visual.global_
    # An offscreen buffer the size of the largest image: clearing and reading back a 640 x 480
    # buffer for a 224 x 224 image cost ~5% of a frame, for the same pixels.
    g.offwidth, g.offheight = width, height
    if "lights" in draw:
        _lights(mj, draw["lights"])
    if draw.get("shadow_map_px"):
        _shadows(mj, int(draw["shadow_map_px"]), scene.spec.table)
    if "background" in draw:
        _texture(mj, "look/sky", mujoco.mjtTexture.mjTEXTURE_SKYBOX, draw["background"])
    if "floor" in draw:
        _surface_geom(mj, "floor", "floor", draw["floor"])
    if "table" in draw:
        _surface_geom(mj, "table_top", "table", draw["table"])
    if "blocks" in draw:
        _blocks(mj, draw["blocks"], {p.name: p.letter for p in scene.spec.props if isinstance(p, Box)})
    if draw.get("arm", "primitives") == "mesh":
        if scene.spec.robot.model != "builtin:panda":
            raise LookError(f"look {draw.get('look')!r}: `arm: mesh` draws the built-in Panda, not robot "
                            f"{scene.spec.robot.name!r} ({scene.spec.robot.model}); use `arm: primitives`")
        dress_panda(mj, scene.model, ROBOT_PREFIX)
    _capsules_as_meshes(mj)
    try:
        model = mj.compile()
    except ValueError as exc:
        raise SimError(f"the scene does not compile under look {draw.get('look')!r}: {exc}") from exc
    if draw.get("shadow_map_px"):
        model.vis.map.shadowclip = SHADOW_HALF_M / model.stat.extent
    base = scene.model
    for attr in ("nq", "nv", "nbody", "ngeom", "ncam"):
        if getattr(model, attr) != getattr(base, attr):
            raise SimError(f"look {draw.get('look')!r}: the render model has {attr}={getattr(model, attr)}, the "
                           f"scene {getattr(base, attr)}; a look must change appearance only")
    if state_size(model) != state_size(base):
        raise SimError(f"look {draw.get('look')!r}: render model state size differs from the scene's")
    out = scene_from_model(scene.spec, model)
    for name, cam in out.cameras.items():
        src = scene.cameras[name]
        model.cam_pos[cam] = base.cam_pos[src]
        model.cam_quat[cam] = base.cam_quat[src]
        model.cam_fovy[cam] = base.cam_fovy[src]
    for name, item in sorted(draw.get("cameras", {}).items()):
        if name not in out.cameras:
            raise LookError(f"look draw: camera {name!r} is not in the scene; cameras: {sorted(out.cameras)}")
        cam = out.cameras[name]
        if "pos" in item:
            model.cam_pos[cam] = item["pos"]
            model.cam_quat[cam] = look_at_quat(item["pos"], item["target"])
        if "fovy" in item:
            model.cam_fovy[cam] = item["fovy"]
        model.cam_pos[cam] += item["pos_offset_m"]
        model.cam_quat[cam] = _quat_mul_rotvec(model.cam_quat[cam], item["rot_offset_rad"])
        model.cam_fovy[cam] += item["fovy_offset_deg"]
    mujoco.mj_forward(model, out.data)
    return out
