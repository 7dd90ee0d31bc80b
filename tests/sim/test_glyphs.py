"""Block faces: letters from the task sidecar, legible on every family colour, with the face count."""

import numpy as np
import pytest

from demoforge.errors import SimError
from demoforge.sim import Box, build_scene, default_scene
from demoforge.sim.glyphs import FACE_COUNTS, LETTER_CELL, glyph_atlas, ink, letter_face_image
from demoforge.tasks.families import COLOURS


def _luminance(grey: float) -> float:
    c = grey / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


@pytest.mark.parametrize("name, rgba", COLOURS)
def test_letter_ink_contrasts_with_every_family_colour(name, rgba):
    from demoforge.sim.glyphs import _luminance as face_luminance

    y_face, y_ink = face_luminance(rgba), _luminance(ink(rgba))
    ratio = (max(y_face, y_ink) + 0.05) / (min(y_face, y_ink) + 0.05)
    assert ratio >= 4.5, (name, ratio)  # WCAG AA for text


def test_letter_faces_are_large_two_coloured_and_show_the_face_count():
    atlas = glyph_atlas((0.85, 0.1, 0.1, 1.0), "K")
    assert atlas.shape == (6 * LETTER_CELL, LETTER_CELL, 3)
    assert len(np.unique(atlas.reshape(-1, 3), axis=0)) == 2
    face = letter_face_image(1, (0.85, 0.1, 0.1, 1.0), "K")
    rows = np.flatnonzero((face != face[0, 0]).any(axis=(1, 2)))
    assert rows[-1] - rows[0] >= 0.8 * LETTER_CELL  # letter and dots span most of the face height
    faces = [letter_face_image(c, (0.85, 0.1, 0.1, 1.0), "K") for c in FACE_COUNTS]
    assert len({f.tobytes() for f in faces}) == 6  # every face tells which one it is


def test_a_box_letter_needs_glyphs_and_a_font_letter():
    with pytest.raises(SimError, match=r"letter '\?' needs glyphs=True"):
        build_scene(default_scene(props=(Box("b", (0.04,) * 3, (0.5, 0, 0.42), glyphs=True, letter="?"),)))
    scene = build_scene(default_scene(props=(Box("b", (0.04,) * 3, (0.5, 0, 0.42), glyphs=True, letter="Q"),)))
    assert scene.model.tex_height[scene.model.texture("b_glyphs").id] == 6 * LETTER_CELL


def test_an_atlas_is_drawn_once_per_colour_and_letter_and_cannot_be_changed():
    red = glyph_atlas((0.85, 0.1, 0.1, 1.0), "K")
    assert glyph_atlas([0.85, 0.1, 0.1, 0.5], "K") is red  # the same colour (alpha plays no part)
    assert glyph_atlas((0.85, 0.1, 0.1, 1.0), "L") is not red
    assert not np.array_equal(glyph_atlas((0.1, 0.1, 0.85, 1.0), "K"), red)
    assert not np.array_equal(glyph_atlas((0.85, 0.1, 0.1, 1.0)), glyph_atlas((0.1, 0.1, 0.85, 1.0)))
    with pytest.raises(ValueError, match="read-only"):
        red[0, 0, 0] = 0
    with pytest.raises(ValueError, match="not one the block font draws"):
        glyph_atlas((0.85, 0.1, 0.1, 1.0), "?")
