"""Burning short labels into frames with a 5x7 bitmap font (no font files, no GL)."""

from __future__ import annotations

import numpy as np

from demoforge.render.font import _ROWS as LETTERS

_EXTRA = {
    "0": ("01110", "10001", "10011", "10101", "11001", "10001", "01110"),
    "1": ("00100", "01100", "00100", "00100", "00100", "00100", "01110"),
    "2": ("01110", "10001", "00001", "00010", "00100", "01000", "11111"),
    "3": ("11110", "00001", "00001", "01110", "00001", "00001", "11110"),
    "4": ("00010", "00110", "01010", "10010", "11111", "00010", "00010"),
    "5": ("11111", "10000", "11110", "00001", "00001", "10001", "01110"),
    "6": ("00110", "01000", "10000", "11110", "10001", "10001", "01110"),
    "7": ("11111", "00001", "00010", "00100", "01000", "01000", "01000"),
    "8": ("01110", "10001", "10001", "01110", "10001", "10001", "01110"),
    "9": ("01110", "10001", "10001", "01111", "00001", "00010", "01100"),
    " ": ("00000",) * 7,
    "_": ("00000",) * 6 + ("11111",),
    "-": ("00000", "00000", "00000", "11111", "00000", "00000", "00000"),
    ":": ("00000", "00100", "00000", "00000", "00000", "00100", "00000"),
    "=": ("00000", "00000", "11111", "00000", "11111", "00000", "00000"),
    "/": ("00001", "00010", "00010", "00100", "01000", "01000", "10000"),
    "?": ("01110", "10001", "00001", "00010", "00100", "00000", "00100"),
}
_GLYPHS = {c: np.array([[b == "1" for b in row] for row in rows]) for c, rows in {**LETTERS, **_EXTRA}.items()}


def text_mask(text: str, scale: int = 1) -> np.ndarray:
    """(7 * scale, 6 * scale * len) bool mask of `text` (upper-cased; unknown characters as '?')."""
    cols = []
    for c in text.upper():
        g = _GLYPHS.get(c, _GLYPHS["?"])
        cols += [g, np.zeros((7, 1), bool)]
    mask = np.concatenate(cols, axis=1) if cols else np.zeros((7, 0), bool)
    return np.kron(mask, np.ones((scale, scale), bool))


def burn_text(frame: np.ndarray, text: str, row: int, col: int, *, scale: int = 1) -> None:
    """White text on a black box at (row, col), clipped to the frame (in place)."""
    mask = text_mask(text, scale)
    h, w = frame.shape[:2]
    mh, mw = min(mask.shape[0] + 2, h - row), min(mask.shape[1] + 2, w - col)
    if mh <= 0 or mw <= 0:
        return
    frame[row:row + mh, col:col + mw] = 0
    m = mask[: mh - 1, : mw - 1]
    frame[row + 1:row + 1 + m.shape[0], col + 1:col + 1 + m.shape[1]][m] = 255
