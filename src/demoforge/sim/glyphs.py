"""Face glyphs for box props, drawn into a cube texture here (no image files).

Every face shows its die count (1..6, a different count on each face, opposite faces summing
to 7), so a camera sees a block's orientation (flip and rotate tasks). A block with a letter
(a task sidecar's glyph) shows the letter large on every face, in black or white ink, whichever
contrasts more with the block's colour, and the face's count as a row of small dots under it;
the letter face is drawn at 4x the pip face's resolution so a 4 cm block's letter stays sharp
in a 224 px front view (texture minification smooths it).
"""

from __future__ import annotations

import functools

import mujoco
import numpy as np

from demoforge.sim.font import LETTERS, letter_mask

CELL = 32  # pip face texture side [px]
LETTER_CELL = 128  # letter face texture side [px]
_LETTER_SCALE = 13  # letter face: px per font cell (5x7 cells: a 65 x 91 px letter, 70% of the face)
_LETTER_TOP = 7  # letter face: rows above the letter [px]; the count's dots sit below it
# Pip centres on a 3x3 grid (row, col) for each count.
_PIPS = {
    1: [(1, 1)],
    2: [(0, 0), (2, 2)],
    3: [(0, 0), (1, 1), (2, 2)],
    4: [(0, 0), (0, 2), (2, 0), (2, 2)],
    5: [(0, 0), (0, 2), (1, 1), (2, 0), (2, 2)],
    6: [(0, 0), (0, 2), (1, 0), (1, 2), (2, 0), (2, 2)],
}
# A cube texture given as data is six square faces stacked vertically, in MuJoCo's order
# +x, -x, +y, -y, +z, -z; opposite faces sum to 7 as on a die.
FACE_COUNTS = (1, 6, 2, 5, 3, 4)
# Quarter turns (counter-clockwise, np.rot90) that make a letter read upright from outside the
# cube: on the side faces with +z up, on the top face with -x up (as the front camera, which
# looks along -x, sees it) and on the bottom face with +x up; measured on MuJoCo's cube mapping.
_LETTER_TURNS = (1, -1, 2, 0, 1, 1)


def _rgb8(rgba) -> np.ndarray:
    return np.round(np.asarray(rgba[:3], float) * 255).astype(np.uint8)


def face_image(count: int, rgba) -> np.ndarray:
    """(CELL, CELL, 3) uint8: `count` white pips on the prop colour."""
    img = np.empty((CELL, CELL, 3), np.uint8)
    img[:] = (np.asarray(rgba[:3]) * 255).astype(np.uint8)
    yy, xx = np.mgrid[0:CELL, 0:CELL]
    for r, c in _PIPS[count]:
        cy, cx = (r + 1) * CELL / 4, (c + 1) * CELL / 4
        img[(yy - cy) ** 2 + (xx - cx) ** 2 <= (CELL / 10) ** 2] = 245
    return img


def _luminance(rgb) -> float:
    """WCAG relative luminance of an sRGB colour in [0, 1]."""
    c = np.asarray(rgb[:3], float)
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(lin @ (0.2126, 0.7152, 0.0722))


def ink(rgba) -> int:
    """Grey level of letters on a face of colour `rgba`: near-black or near-white, whichever has the
    higher contrast ratio with it."""
    y = _luminance(rgba)
    return 0 if (y + 0.05) / 0.05 >= 1.05 / (y + 0.05) else 255  # black or white


def letter_face_image(count: int, rgba, letter: str) -> np.ndarray:
    """(LETTER_CELL, LETTER_CELL, 3) uint8: `letter` over `count` dots, in `ink` on the prop colour."""
    img = np.empty((LETTER_CELL, LETTER_CELL, 3), np.uint8)
    img[:] = _rgb8(rgba)
    mark = letter_mask(letter, LETTER_CELL, scale=_LETTER_SCALE, top=_LETTER_TOP)
    yy, xx = np.mgrid[0:LETTER_CELL, 0:LETTER_CELL]
    cy, r, pitch = _LETTER_TOP + 7 * _LETTER_SCALE + 13, 6, 17  # dot row centre, radius, pitch [px]
    for k in range(count):
        cx = LETTER_CELL / 2 + (k - (count - 1) / 2) * pitch
        mark |= (yy - cy) ** 2 + (xx - cx) ** 2 <= r ** 2
    img[mark] = ink(rgba)
    return img


def glyph_atlas(rgba, letter: str | None = None) -> np.ndarray:
    """(6 side, side, 3) uint8: the six faces of a cube texture (pips, or `letter` and dots).
    Read-only: one array per colour and letter is kept (every scene build and look draws the
    same few blocks again, and a letter atlas takes a few milliseconds to draw)."""
    if letter is not None and letter not in LETTERS:
        raise ValueError(f"letter {letter!r} is not one the block font draws ({LETTERS})")
    return _atlas(tuple(float(c) for c in rgba[:3]), letter)


@functools.lru_cache(maxsize=32)  # at most 32 x 295 kB
def _atlas(rgb: tuple[float, float, float], letter: str | None) -> np.ndarray:
    if letter is None:
        atlas = np.concatenate([face_image(count, rgb) for count in FACE_COUNTS])
    else:
        atlas = np.concatenate([np.rot90(letter_face_image(count, rgb, letter), turns)
                                for count, turns in zip(FACE_COUNTS, _LETTER_TURNS, strict=True)])
    atlas.flags.writeable = False
    return atlas


def add_glyph_material(mj: mujoco.MjSpec, name: str, rgba, letter: str | None = None) -> str:
    """Add a glyph texture (pips, or `letter` and dots) and material for prop `name`; returns the material name."""
    atlas = glyph_atlas(rgba, letter)
    tex = mj.add_texture(name=f"{name}_glyphs", type=mujoco.mjtTexture.mjTEXTURE_CUBE)
    tex.width, tex.height, tex.nchannel = atlas.shape[1], atlas.shape[0], 3
    tex.data = atlas.tobytes()
    mat = mj.add_material(name=f"{name}_glyphs")
    mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = tex.name
    return mat.name
