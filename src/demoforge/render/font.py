"""The block-letter font lives in `demoforge.sim.font` (scenes draw letters too); re-exported here."""

from demoforge.sim.font import _ROWS, LETTERS, letter_mask

__all__ = ["LETTERS", "_ROWS", "letter_mask"]
