"""Look draws: seeded, independent per section, JSON round trips, and refusals."""

from __future__ import annotations

import dataclasses
import json

import pytest

from demoforge.render import LookError, LookTargets, draw_look, load_look, loads_look_draw, look_from_dict, look_seed

TARGETS = LookTargets(blocks={"red": (0.85, 0.15, 0.15), "white": (0.95, 0.95, 0.95)},
                      cameras=("front", "side", "wrist"))


def test_same_seed_same_draw_and_copies_differ():
    look = load_look("randomized")
    a = draw_look(look, look_seed(0, look.name, 3, 0), TARGETS)
    assert a == draw_look(look, look_seed(0, look.name, 3, 0), TARGETS)
    for other in (look_seed(0, look.name, 3, 1), look_seed(0, look.name, 4, 0), look_seed(1, look.name, 3, 0)):
        b = draw_look(look, other, TARGETS)
        assert b["table"] != a["table"] and b["cameras"] != a["cameras"]
    assert json.loads(json.dumps(a)) == a == loads_look_draw(json.dumps(a))
    assert set(a["blocks"]) == {"red", "white"} and len({b["glyph"] for b in a["blocks"].values()}) == 2
    assert all(b["glyph"] in "ABCDEFGHJKLM" for b in a["blocks"].values())
    assert set(a["cameras"]) == {"front", "side", "wrist"}


def test_sections_draw_from_independent_streams():
    full = load_look("randomized")
    no_lights = look_from_dict({"name": "randomized", "table": json.loads(json.dumps(dataclasses.asdict(full.table)))})
    seq = look_seed(7, "randomized", 0, 0)
    a, b = draw_look(full, seq, TARGETS), draw_look(no_lights, seq, TARGETS)
    assert a["table"] == b["table"] and "lights" not in b


def test_test_split_uses_the_test_sets():
    look = look_from_dict({"name": "held-out", "split": "test",
                           "blocks": {"colours": {"train": ["red"], "test": ["orange", "purple"]},
                                      "glyphs": {"train": "AB", "test": "XY"}}})
    draw = draw_look(look, look_seed(0, look.name, 0, 0), TARGETS)
    assert sorted(b["glyph"] for b in draw["blocks"].values()) == ["X", "Y"]
    assert sorted(tuple(b["rgb"]) for b in draw["blocks"].values()) == sorted([(0.95, 0.5, 0.1), (0.55, 0.2, 0.75)])


def test_refusals_name_the_fix():
    few = look_from_dict({"name": "few", "blocks": {"glyphs": {"train": "A", "test": "B"}}})
    with pytest.raises(LookError, match="1 letters for 2 blocks"):
        draw_look(few, look_seed(0, "few", 0, 0), TARGETS)
    cams = look_from_dict({"name": "cams", "cameras": {"top": {"pos_m": 0.01}}})
    with pytest.raises(LookError, match=r"cameras \['top'\] are not in the scene"):
        draw_look(cams, look_seed(0, "cams", 0, 0), TARGETS)
    with pytest.raises(LookError, match="not a look draw"):
        loads_look_draw('{"schema": "demoforge.randomization/1"}')


def test_randomized_block_colours_stay_within_their_names_and_vary_their_finish():
    """Task words name blocks by colour, so a draw may move a colour only within its name."""
    import colorsys

    from demoforge.tasks.families import COLOURS

    named = {name: rgba[:3] for name, rgba in COLOURS}
    look = load_look("randomized")
    hue_turns = look.blocks.hue_jitter
    assert 0 < hue_turns <= 0.03 and look.lights.count[0] >= 2 and look.lights.colour_jitter > 0
    finishes = set()
    for copy in range(20):
        names = sorted(named)[copy % 2::2]  # no more blocks than the look has letters
        targets = LookTargets(blocks={n: named[n] for n in names}, cameras=("front", "side", "wrist"))
        draw = draw_look(look, look_seed(0, look.name, 0, copy), targets)
        for name, item in draw["blocks"].items():
            h0, s0, _ = colorsys.rgb_to_hsv(*named[name])
            h, s, _ = colorsys.rgb_to_hsv(*item["rgb"])
            if s0 > 0.2 and s > 0.05:  # hue is meaningless for white, black and grey
                assert min(abs(h - h0), 1 - abs(h - h0)) <= hue_turns + 1e-6, (name, h0, h)
            assert 0 <= item["specular"] <= 1 and 0 <= item["shininess"] <= 1
            finishes.add((item["specular"], item["shininess"]))
        lights = draw["lights"]["lights"]
        assert len(lights) >= 2 and len({tuple(li["dir"]) for li in lights}) == len(lights)
    assert len(finishes) > 100


def test_block_finish_needs_both_ranges():
    with pytest.raises(LookError, match="give specular and shininess together"):
        look_from_dict({"name": "x", "blocks": {"specular": [0, 1]}})
