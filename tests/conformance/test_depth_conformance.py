"""Depth maps written by DatasetWriter come back from real lerobot 0.6.1 as the same depths."""

import numpy as np
import pytest

from demoforge.dataset import DatasetWriter, Feature, open_dataset
from lerobot_harness import probe_many, require_dump

pytestmark = pytest.mark.conformance


def test_lerobot_dequantizes_our_depth_to_the_same_values(tmp_path, lerobot_python):
    rng = np.random.default_rng(0)
    feats = {"observation.state": Feature("float32", (2,)),
             "observation.images.depth": Feature("video", (24, 32, 1), info={"is_depth_map": True})}
    depths = []
    with DatasetWriter.create(tmp_path / "ds", fps=30, features=feats) as w:
        for e in range(2):
            d = rng.uniform(0.2, 4.0, (6, 24, 32)).astype(np.float32)
            depths.append(d)
            w.add_episode({"observation.state": rng.normal(size=(6, 2)), "observation.images.depth": d}, task="t")
    ours = np.concatenate([open_dataset(tmp_path / "ds").read_video(e, "observation.images.depth")
                           for e in range(2)])[..., 0]
    dump = require_dump(probe_many(lerobot_python, [tmp_path / "ds"], tmp_path / "probe")[0])
    theirs = dump.columns["observation.images.depth"][..., 0]
    assert theirs.shape == ours.shape
    # lerobot returns whole millimetres by default (our depth_unit is metres, converted on read)
    assert np.nanmax(theirs) > 100
    np.testing.assert_allclose(theirs / 1000.0, ours, rtol=0, atol=0.5e-3 + 1e-6)
    # and both are the written depths up to the 12-bit log quantization
    np.testing.assert_allclose(ours, np.concatenate(depths), rtol=0.002, atol=0.002)
