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
# A cube texture given as data is six square faces stacked vertically, in MuJoCo's order
# +x, -x, +y, -y, +z, -z; opposite faces sum to 7 as on a die.
FACE_COUNTS = (1, 6, 2, 5, 3, 4)


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
    """(6 CELL, CELL, 3) uint8: the six faces of a cube texture."""
    return np.concatenate([face_image(count, rgba) for count in FACE_COUNTS])


def add_glyph_material(mj: mujoco.MjSpec, name: str, rgba) -> str:
    """Add a pip texture and material for prop `name`; returns the material name."""
    atlas = glyph_atlas(rgba)
    tex = mj.add_texture(name=f"{name}_glyphs", type=mujoco.mjtTexture.mjTEXTURE_CUBE)
    tex.width, tex.height, tex.nchannel = atlas.shape[1], atlas.shape[0], 3
    tex.data = atlas.tobytes()
    mat = mj.add_material(name=f"{name}_glyphs")
    mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = tex.name
    return mat.name
