"""Looks: the shipped ones load, and bad files are rejected with every problem at once."""

from __future__ import annotations

import pytest

from demoforge.render import LookError, load_look, look_from_dict, parse_look_arg, shipped_looks


def test_shipped_looks_load():
    assert shipped_looks() == ["photo", "plain", "randomized"]
    plain = load_look("plain")
    assert (plain.name, plain.width, plain.height) == ("plain", 224, 224)
    assert plain.lights is plain.background is plain.table is plain.blocks is None and plain.cameras == {}
    rnd = load_look("randomized")
    assert rnd.lights.count == (2, 4) and "wood" in rnd.table.textures and rnd.shadow_map_px == 384
    assert plain.shadow_map_px == 384
    assert rnd.blocks.glyphs == {"train": "ABCDEFGHJKLM", "test": "NPQRSTUVWXYZ"}
    assert set(rnd.cameras) == {"default", "wrist"}


def test_a_look_file_with_copies(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\nsplit: test\nimage: {width: 96, height: 64}\nlights: {count: 2}\n")
    req = parse_look_arg(f"{path}:3")
    assert (req.look.name, req.look.split, req.look.width, req.look.height, req.copies) == ("mine", "test", 96, 64, 3)
    assert req.look.lights.count == (2, 2)
    assert parse_look_arg("randomized").copies == 1
    with pytest.raises(LookError, match="copies must be >= 1"):
        parse_look_arg("plain:0")


def test_every_problem_is_reported_at_once():
    raw = {"name": "bad", "split": "validation", "image": {"width": 225, "height": 224}, "colour": 1,
           "lights": {"count": [3, 1], "intensity": [0.2, 1.5], "glare": 1},
           "table": {"textures": ["marble"]},
           "blocks": {"glyphs": {"train": "ABA", "test": "XYZ"}, "colours": {"train": ["red", "chartreuse"]}},
           "cameras": {"front": {"pos_m": -0.1}}, "depth": 1}
    with pytest.raises(LookError) as info:
        look_from_dict(raw, where="bad.yaml")
    text = str(info.value)
    for expected in ("unknown key 'colour'", "split: 'validation'", "image.width: 225", "count: low 3 > high 1",
                     "intensity: [0.2, 1.5] must lie within", "unknown key 'glare'", "marble",
                     "glyphs.train: 'ABA'", "must map both splits", "unknown key 'depth'",
                     "cameras.front.pos_m: -0.1"):
        assert expected in text, expected
    assert text.startswith("bad.yaml: invalid look")


def test_unknown_look_names_list_the_shipped_ones(tmp_path):
    with pytest.raises(LookError, match=r"shipped looks: \['photo', 'plain', 'randomized'\]"):
        load_look("fancy")
    with pytest.raises(LookError, match="needs at least a name"):
        look_from_dict(None)


def test_camera_pose_lens_and_size_are_look_settings():
    look = look_from_dict({"name": "framed", "image": {"width": 96, "height": 64}, "cameras": {
        "front": {"pos": [0.9, 0.1, 0.8], "target": [0.3, 0.0, 0.4], "fovy": 50, "width": 128, "height": 96},
        "default": {"pos_m": 0.01}}})
    front = look.cameras["front"]
    assert (front.pos, front.target, front.fovy) == ((0.9, 0.1, 0.8), (0.3, 0.0, 0.4), 50.0)
    assert look.image_size("front") == (128, 96) and look.image_size("wrist") == (96, 64)
    assert look.camera("side").pos_m == 0.01 and not front.jitters


def test_bad_camera_settings_are_all_reported():
    raw = {"name": "bad", "cameras": {"front": {"pos": [1, 0, 1]}, "side": {"pos": [1, 0], "target": [0, 0, 0],
                                                                          "fovy": 0, "width": 33}}}
    with pytest.raises(LookError) as info:
        look_from_dict(raw, where="bad.yaml")
    text = str(info.value)
    assert "bad.yaml.cameras.front: give pos and target together" in text
    assert "bad.yaml.cameras.side.pos: [1, 0] must be [x, y, z]" in text
    assert "bad.yaml.cameras.side.fovy: 0 must be a vertical field of view in [1, 170]" in text
    assert "bad.yaml.cameras.side.width: 33 must be an even whole number" in text
