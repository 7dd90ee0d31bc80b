"""Procedural surface textures drawn with numpy: wood, cloth, plastic and painted finishes.

Each is a pure function of its colours and an integer seed (a numpy PCG64 stream), so a
look draw that records them reproduces the texture bit for bit. Images tile seamlessly
(the noise wraps around), because MuJoCo repeats a material's texture across a surface.

- wood: boards along the image's rows, each with its own tone and growth rings bent by
  low-frequency noise, fine fibres and dark joints; `rgb1` is the light wood, `rgb2` the grain;
- cloth: a plain weave of warp and weft threads with fibre noise, in `rgb1`, threads
  shaded towards `rgb2`;
- plastic: an even `rgb1` with a faint mottle (the sheen comes from the material's specular);
- painted: `rgb1` with long roller strokes and soft blotches of `rgb2`.
"""

from __future__ import annotations

import numpy as np

KINDS = ("wood", "cloth", "plastic", "painted")
SIZE = 256  # texture side [px]
# Wood keeps natural colours whatever a look's hue range: HSV hue, saturation, value ranges [0..1].
WOOD_HSV = ((0.05, 0.11), (0.35, 0.7), (0.35, 0.85))
# The second colour of each kind (grain, thread shadow, mottle, blotch) as a fraction of the first.
SHADE = {"wood": 0.55, "cloth": 0.65, "plastic": 0.92, "painted": 0.88}


def value_noise(rng: np.random.Generator, size: int, cells: tuple[int, int]) -> np.ndarray:
    """(size, size) float in [0, 1]: a random (rows, cols) grid smoothly interpolated, wrapping."""
    rows, cols = cells
    grid = rng.random((rows, cols))
    y = np.arange(size) * rows / size
    x = np.arange(size) * cols / size
    y0, x0 = np.floor(y).astype(int), np.floor(x).astype(int)
    fy, fx = y - y0, x - x0
    fy, fx = fy * fy * (3 - 2 * fy), fx * fx * (3 - 2 * fx)  # smoothstep: no creases at the cells
    y1, x1 = (y0 + 1) % rows, (x0 + 1) % cols
    top = grid[y0][:, x0] * (1 - fx) + grid[y0][:, x1] * fx
    bottom = grid[y1][:, x0] * (1 - fx) + grid[y1][:, x1] * fx
    return top * (1 - fy)[:, None] + bottom * fy[:, None]


def fractal_noise(rng: np.random.Generator, size: int, cells: tuple[int, int], octaves: int = 4) -> np.ndarray:
    """(size, size) float in [0, 1]: octaves of value noise, each twice as fine and half as strong."""
    total, weight = np.zeros((size, size)), 0.0
    for k in range(octaves):
        w = 0.5 ** k
        total += w * value_noise(rng, size, (cells[0] * 2 ** k, cells[1] * 2 ** k))
        weight += w
    return total / weight


def _mix(rgb1, rgb2, t: np.ndarray) -> np.ndarray:
    t = np.clip(t, 0.0, 1.0)[..., None]
    return (1 - t) * np.asarray(rgb1, float) + t * np.asarray(rgb2, float)


def wood(rgb1, rgb2, rng: np.random.Generator, size: int = SIZE) -> np.ndarray:
    planks = 4  # boards across the image, each cut from its own log
    rows = np.arange(size)[:, None] / size * planks
    board, across = np.floor(rows), rows % 1.0
    offset = rng.random(planks)[board.astype(int)]
    warp = fractal_noise(rng, size, (planks * 2, 2), 3)  # bends the grain slowly along the board
    grain = (across * 2.5 + offset * 7 + 0.9 * warp) % 1.0  # a few ring bands across each board
    band = np.abs(2 * grain - 1) ** 8  # thin dark late-wood lines
    fibres = value_noise(rng, size, (size // 2, 6))  # fine streaks along the rows
    tone = 0.25 * rng.random(planks)[board.astype(int)]  # boards differ a little in colour
    seam = (np.minimum(across, 1 - across) * size / planks < 1.0).astype(float)  # dark joints
    t = 0.55 * band + 0.25 * fibres + tone + 0.8 * seam
    return _mix(rgb1, rgb2, t * np.ones((1, size)))


def cloth(rgb1, rgb2, rng: np.random.Generator, size: int = SIZE) -> np.ndarray:
    threads = 32  # threads across the image, each way
    phase = 2 * np.pi * threads * np.arange(size) / size
    warp, weft = np.sin(phase)[None, :], np.sin(phase)[:, None]
    over = (np.sin(phase / 2)[:, None] * np.sin(phase / 2)[None, :]) > 0  # which thread lies on top
    weave = np.where(over, 0.5 + 0.5 * warp, 0.5 + 0.5 * weft)
    fuzz = value_noise(rng, size, (size // 4, size // 4))
    t = 0.35 * (1 - weave) + 0.2 * fuzz + 0.2 * fractal_noise(rng, size, (3, 3), 2)
    return _mix(rgb1, rgb2, t)


def plastic(rgb1, rgb2, rng: np.random.Generator, size: int = SIZE) -> np.ndarray:
    t = 0.08 * fractal_noise(rng, size, (3, 3), 3) + 0.03 * rng.random((size, size))
    return _mix(rgb1, rgb2, t)


def painted(rgb1, rgb2, rng: np.random.Generator, size: int = SIZE) -> np.ndarray:
    strokes = value_noise(rng, size, (size // 6, 3))  # long roller strokes along the rows
    blotches = fractal_noise(rng, size, (4, 4), 3)
    t = 0.12 * strokes + 0.25 * np.clip(2 * blotches - 0.8, 0, 1) + 0.03 * rng.random((size, size))
    return _mix(rgb1, rgb2, t)


GENERATORS = {"wood": wood, "cloth": cloth, "plastic": plastic, "painted": painted}


def texture_image(kind: str, rgb1, rgb2, seed: int, size: int = SIZE) -> np.ndarray:
    """(size, size, 3) uint8 texture of `kind` (one of KINDS)."""
    if kind not in GENERATORS:
        raise ValueError(f"unknown procedural texture {kind!r}; kinds: {list(KINDS)}")
    rgb = GENERATORS[kind](rgb1, rgb2, np.random.default_rng(seed), size)
    return np.round(np.clip(rgb, 0.0, 1.0) * 255).astype(np.uint8)
