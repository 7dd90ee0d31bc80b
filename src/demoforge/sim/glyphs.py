"""Face glyphs for box props: dice pips (1..6), a different count on each face.

They make a block's orientation visible to a camera (for flip and rotate tasks) without any
image files: the cube texture is drawn here into a buffer.
"""

from __future__ import annotations

import mujoco
import numpy as np

CELL = 32  # face texture side [px]
# Pip centres on a 3x3 grid (row, col) for each count.
_PIPS = {
    1: [(1, 1)],
    2: [(0, 0), (2, 2)],
    3: [(0, 0), (1, 1), (2, 2)],
    4: [(0, 0), (0, 2), (2, 0), (2, 2)],
    5: [(0, 0), (0, 2), (1, 1), (2, 0), (2, 2)],
    6: [(0, 0), (0, 2), (1, 0), (1, 2), (2, 0), (2, 2)],
}
# MuJoCo's cube texture grid (4 columns x 3 rows): which cell holds which face.
_LAYOUT = ".U..LFRB.D.."
_FACE_COUNT = {"R": 1, "L": 6, "U": 2, "D": 5, "F": 3, "B": 4}  # opposite faces sum to 7


def face_image(count: int, rgba) -> np.ndarray:
    """(CELL, CELL, 3) uint8: `count` white pips on the prop colour."""
    img = np.empty((CELL, CELL, 3), np.uint8)
    img[:] = (np.asarray(rgba[:3]) * 255).astype(np.uint8)
    yy, xx = np.mgrid[0:CELL, 0:CELL]
    for r, c in _PIPS[count]:
        cy, cx = (r + 1) * CELL / 4, (c + 1) * CELL / 4
        img[(yy - cy) ** 2 + (xx - cx) ** 2 <= (CELL / 10) ** 2] = 245
    return img


def glyph_atlas(rgba) -> np.ndarray:
    """(3 CELL, 4 CELL, 3) uint8 cube-texture atlas in MuJoCo's grid layout."""
    atlas = np.zeros((3 * CELL, 4 * CELL, 3), np.uint8)
    for k, face in enumerate(_LAYOUT):
        if face != ".":
            r, c = divmod(k, 4)
            atlas[r * CELL:(r + 1) * CELL, c * CELL:(c + 1) * CELL] = face_image(_FACE_COUNT[face], rgba)
    return atlas


def add_glyph_material(mj: mujoco.MjSpec, name: str, rgba) -> str:
    """Add a pip texture and material for prop `name`; returns the material name."""
    atlas = glyph_atlas(rgba)
    tex = mj.add_texture(name=f"{name}_glyphs", type=mujoco.mjtTexture.mjTEXTURE_CUBE)
    tex.width, tex.height, tex.nchannel = atlas.shape[1], atlas.shape[0], 3
    tex.gridsize = [3, 4]
    tex.gridlayout = _LAYOUT
    tex.data = atlas.tobytes()
    mat = mj.add_material(name=f"{name}_glyphs")
    mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = tex.name
    return mat.name
