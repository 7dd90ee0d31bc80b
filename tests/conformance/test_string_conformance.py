"""A per-frame text feature written by DatasetWriter loads in real lerobot 0.6.1 as the same texts."""

import numpy as np
import pytest

from demoforge.dataset import DatasetWriter, Feature
from lerobot_harness import probe_many, require_dump

pytestmark = pytest.mark.conformance


def test_lerobot_returns_our_texts(tmp_path, lerobot_python):
    feats = {"observation.state": Feature("float32", (2,)), "goal.action": Feature("string", (1,))}
    texts = [["idle", "pick red", "pick red"], ["stack red on blue", "unstack ü from β"]]
    with DatasetWriter.create(tmp_path / "ds", fps=30, features=feats) as w:
        for e, ep in enumerate(texts):
            w.add_episode({"observation.state": np.full((len(ep), 2), e, np.float32),
                           "goal.action": np.array(ep, dtype=object)}, task="t")
    dump = require_dump(probe_many(lerobot_python, [tmp_path / "ds"], tmp_path / "probe")[0])
    assert dump.columns["goal.action"].ravel().tolist() == [t for ep in texts for t in ep]
    assert "goal.action" not in dump.stats
