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
