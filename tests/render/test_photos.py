"""Photographs in looks: sources, validation, the sky box's face layout, train/test splits, and
the shipped photographic set (skipped without scikit-image: `pip install 'demoforge[looks]'`)."""

from __future__ import annotations

import importlib.util

import mujoco
import numpy as np
import pytest

from demoforge.render import LookError, LookTargets, draw_look, load_look, look_from_dict, look_seed, photos
from demoforge.render.sheet import write_png

TARGETS = LookTargets(blocks={"red": (0.85, 0.15, 0.15)}, cameras=("front", "wrist"))


def _png(path, rgb, size=(24, 16)):
    image = np.zeros((size[1], size[0], 3), np.uint8)
    image[...] = rgb
    image[: size[1] // 2, : size[0] // 2] = 255 - np.asarray(rgb)  # not flat, not grey
    return write_png(image, path)


@pytest.fixture
def folders(tmp_path):
    for split, colours in (("train", [(200, 30, 30), (30, 200, 30)]), ("test", [(30, 30, 200)])):
        (tmp_path / split).mkdir()
        for i, rgb in enumerate(colours):
            _png(tmp_path / split / f"{i}.png", rgb)
    return tmp_path


def test_folders_resolve_relative_to_the_look_file_and_splits_draw_their_own(folders):
    (folders / "mine.yaml").write_text("name: mine\nfloor: {images: {train: [train], test: [test/0.png]}}\n"
                                       "background: {images: {train: train, test: test}, projection: walls}\n")
    look = load_look(folders / "mine.yaml")
    assert look.floor.textures == ("image",) and look.background.projection == "walls"
    assert look.floor.images == {"train": (str((folders / "train/0.png").resolve()),
                                           str((folders / "train/1.png").resolve())),
                                 "test": (str((folders / "test/0.png").resolve()),)}
    for split in ("train", "test"):
        seen = {draw_look(load_look(f"{folders / 'mine.yaml'}:{split}"), look_seed(0, "mine", 0, k),
                          TARGETS)["floor"]["image"] for k in range(12)}
        assert seen == set(look.floor.images[split])


def test_bad_image_sources_are_all_reported_naming_file_field_value_and_fix(folders):
    (folders / "empty").mkdir()
    (folders / "broken.png").write_bytes(b"not a png at all")
    (folders / "bad.yaml").write_text(
        "name: bad\n"
        "background: {images: {train: [nowhere], test: [broken.png]}, projection: sideways}\n"
        "floor: {images: {train: [], test: [empty]}}\n"
        "table: {textures: [image, wood]}\n")
    with pytest.raises(LookError) as info:
        load_look(folders / "bad.yaml")
    text = str(info.value)
    assert text.startswith(f"{folders / 'bad.yaml'}: invalid look")
    for expected in ("background.images.train[0]: 'nowhere': no such image file or folder",
                     "relative to the look file's folder",
                     "background.images.test[0]: 'broken.png': cannot read image", "give a PNG or JPEG file",
                     "background.projection: 'sideways' is not one of ['equirect', 'walls']",
                     "floor.images.train: [] must be a non-empty list",
                     "floor.images.test[0]: 'empty': folder", "holds no .png/.jpg/.jpeg images",
                     "table: texture 'image' draws from `images`; give both"):
        assert expected in text, expected


def test_a_split_may_not_repeat_a_train_image(folders):
    with pytest.raises(LookError, match=r"floor.images: train and test share .*name each image in one split only"):
        look_from_dict({"name": "leaky", "floor": {"images": {"train": ["train"], "test": ["train/1.png"]}}},
                       where="leaky.yaml", base=folders)


def test_without_scikit_image_the_shipped_set_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "skimage" else real(name, *a))
    with pytest.raises(LookError, match=r"table.images.train\[0\]: 'skimage:brick': .*pip install 'demoforge\[looks\]'"):
        look_from_dict({"name": "p", "table": {"images": {"train": ["skimage:brick"], "test": ["skimage:grass"]}}},
                       where="p.yaml")
    assert load_look("randomized").background.images is None  # everything else works


def test_a_changed_image_is_refused_when_its_draw_is_rendered(folders):
    from demoforge.render.apply import _photo

    look = look_from_dict({"name": "m", "table": {"images": {"train": ["train/0.png"], "test": ["test"]}}},
                          base=folders)
    surface = draw_look(look, look_seed(0, "m", 0, 0), TARGETS)["table"]
    assert _photo(surface, sky=False).dtype == np.uint8
    _png(folders / "train/0.png", (10, 10, 10))
    with pytest.raises(LookError, match="changed since the draw was made"):
        _photo(surface, sky=False)


def test_surfaces_tile_mirrored_and_grey_images_take_the_drawn_colour(folders):
    grey = write_png(np.tile(np.arange(0, 240, 10, dtype=np.uint8)[None, :, None], (8, 1, 3)), folders / "g.png")
    tinted = photos.surface_image(str(grey), (1.0, 0.5, 0.0))
    assert tinted.shape == (16, 48, 3) and (tinted[..., 2] == 0).all() and tinted[..., 0].max() == 230
    assert np.array_equal(tinted[:, :24], tinted[:, 24:][:, ::-1]) and np.array_equal(tinted[:8], tinted[8:][::-1])
    colour = photos.surface_image(str(folders / "train/0.png"), (0.0, 0.0, 0.0))
    assert np.array_equal(colour[:16, :24], photos.load_image(str(folders / "train/0.png")))  # kept, not tinted


def test_equirect_lookup_finds_each_direction_where_the_panorama_holds_it():
    h, w = 90, 180
    v, u = np.mgrid[0:h, 0:w]
    az, el = (0.5 - (u + 0.5) / w) * 2 * np.pi, (0.5 - (v + 0.5) / h) * np.pi
    dirs = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], -1)
    pano = (dirs + 1) * 100.0  # the panorama's colour is the direction it lies in
    sky = photos.sky_directions(32)
    got = photos.equirect_lookup(pano, sky) / 100.0 - 1
    assert np.abs(got - sky).max() < 0.06


@pytest.mark.parametrize("direction", [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)])
def test_mujoco_draws_the_sky_box_faces_where_sky_directions_says(direction):
    """A sky whose texels are coloured by their direction: a camera looking along d sees d's
    colour in its centre, and the directions of its right and up at the image's edges."""
    side = 32
    colours = np.round((photos.sky_directions(side) + 1) * 127.5).astype(np.uint8)
    spec = mujoco.MjSpec()
    tex = spec.add_texture(name="sky", type=mujoco.mjtTexture.mjTEXTURE_SKYBOX)
    tex.width, tex.height, tex.nchannel = side, 6 * side, 3
    tex.data = colours.reshape(6 * side, side, 3).tobytes()
    spec.visual.headlight.ambient = [1, 1, 1]
    forward = np.asarray(direction, float)
    up = np.array([0.0, 1.0, 0.0]) if abs(forward[2]) > 0.5 else np.array([0.0, 0.0, 1.0])
    right = np.cross(forward, up)
    mat = np.column_stack([right, up, -forward])  # a camera looks along its -z
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, mat.ravel())
    spec.worldbody.add_camera(name="c", quat=quat.tolist(), fovy=60)
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, 64, 64) as renderer:
        renderer.update_scene(data, camera="c")
        image = renderer.render().astype(float) / 127.5 - 1
    t = np.tan(np.deg2rad(30)) * 28 / 32  # the pixel 28 px right of centre, at the 60 deg fovy
    for (row, col), expect in (((32, 32), forward), ((32, 60), forward + t * right), ((4, 32), forward + t * up)):
        expect = expect / np.linalg.norm(expect)
        assert np.abs(image[row, col] - expect).max() < 0.08, (row, col, image[row, col], expect)


skimage_needed = pytest.mark.skipif(importlib.util.find_spec("skimage") is None,
                                    reason="the photographic set needs scikit-image (pip install 'demoforge[looks]')")


@skimage_needed
def test_photo_look_test_draws_show_no_train_image():
    """Two photo:test draws showing photographs on every surface: each drawn texture image
    differs from every image the train split can draw (compared as pixels, not names)."""
    train, test = load_look("photo:train"), load_look("photo:test")
    sections = ("background", "floor", "table")
    train_images = [photos.load_image(ref) for s in sections for ref in getattr(train, s).images["train"]]
    draws = [d for d in (draw_look(test, look_seed(0, "photo", 0, k), TARGETS) for k in range(200))
             if all(d[s]["texture"] == "image" for s in sections)][:2]
    assert len(draws) == 2 and draws[0] != draws[1]
    for draw in draws:
        for s in sections:
            assert draw[s]["image"] in getattr(test, s).images["test"]
            drawn = photos.load_image(draw[s]["image"])
            assert not any(drawn.shape == im.shape and np.array_equal(drawn, im) for im in train_images)
    every = {ref for s in sections for look in (train, test) for split in ("train", "test")
             for ref in getattr(look, s).images[split]}
    assert every <= {photos.PREFIX + n for n in photos.SKIMAGE}  # only the licence-listed images


@skimage_needed
def test_photo_look_renders_the_same_pixels_for_the_same_draw():
    from demoforge.render import CameraRecorder, look_targets
    from demoforge.sim import build_scene
    from demoforge.sim.scene import SceneSpec

    scene = build_scene(SceneSpec())
    look = load_look("photo:test")
    draws = [draw_look(look, look_seed(1, "photo", 0, k), look_targets(scene)) for k in range(40)]
    draw = next(d for d in draws if all(d[s]["texture"] == "image" for s in ("background", "floor", "table")))
    frames = []
    for _ in range(2):  # a fresh context each time
        with CameraRecorder(scene, draw, ("front",)) as rec:
            frames.append(rec.render())
    with CameraRecorder(scene, draw_look(load_look("photo:train"), look_seed(1, "photo", 0, 0), look_targets(scene)),
                        ("front",)) as rec:
        other = rec.render()
    for key in frames[0]:
        assert np.array_equal(frames[0][key], frames[1][key])
        assert not np.array_equal(frames[0][key], other[key])
