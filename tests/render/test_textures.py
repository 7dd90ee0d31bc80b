"""Procedural textures: reproducible from their seed, seamless, and each kind reads as its material."""

import numpy as np
import pytest

from demoforge.render.textures import KINDS, texture_image


@pytest.mark.parametrize("kind", KINDS)
def test_same_seed_same_bytes_other_seed_differs(kind):
    a = texture_image(kind, (0.7, 0.5, 0.3), (0.4, 0.25, 0.1), seed=7)
    assert a.shape == (256, 256, 3) and a.dtype == np.uint8
    assert np.array_equal(a, texture_image(kind, (0.7, 0.5, 0.3), (0.4, 0.25, 0.1), seed=7))
    assert not np.array_equal(a, texture_image(kind, (0.7, 0.5, 0.3), (0.4, 0.25, 0.1), seed=8))


@pytest.mark.parametrize("kind", KINDS)
def test_textures_tile_without_a_seam(kind):
    img = texture_image(kind, (0.7, 0.5, 0.3), (0.4, 0.25, 0.1), seed=3).astype(int)
    inner = np.abs(np.diff(img, axis=1)).mean()  # neighbouring columns inside the image
    wrap = np.abs(img[:, 0] - img[:, -1]).mean()  # the last column against the first (the repeat)
    assert wrap < 3 * inner + 2


def test_kinds_differ_in_structure():
    def contrast(kind):
        img = texture_image(kind, (0.7, 0.5, 0.3), (0.4, 0.25, 0.1), seed=1).astype(float).mean(axis=2)
        return img.std(axis=0).mean(), img.std(axis=1).mean()  # along columns, along rows

    wood_across, wood_along = contrast("wood")
    assert wood_across > 2 * wood_along  # grain runs along the rows
    assert contrast("plastic")[0] < 0.5 * contrast("cloth")[0]  # plastic is nearly even
    with pytest.raises(ValueError, match="kinds: \\['wood', 'cloth', 'plastic', 'painted'\\]"):
        texture_image("marble", (1, 1, 1), (0, 0, 0), seed=0)
