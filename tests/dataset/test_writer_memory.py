"""Peak memory of a whole write does not grow with the number of episodes."""

import json
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import json, resource, sys
    import numpy as np
    from demoforge.dataset import DatasetWriter, Feature
    n, root = int(sys.argv[1]), sys.argv[2]
    feats = {"observation.state": Feature("float32", (8,)), "sim.state": Feature("float64", (40,)),
             "observation.images.front": Feature("video", (32, 32, 3))}
    rng = np.random.default_rng(0)
    with DatasetWriter.create(root, fps=30, features=feats) as w:
        for e in range(n):
            w.add_episode({"observation.state": rng.normal(size=(10, 8)), "sim.state": rng.normal(size=(10, 40)),
                           "observation.images.front": rng.integers(0, 255, (10, 32, 32, 3), dtype=np.uint8)},
                          task=f"task {e % 7}", extra={"seed": e, "plan": ["pick a", "stack a b"] * 5})
    print(json.dumps({"maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
""")


def peak_kb(n, root):
    out = subprocess.run([sys.executable, "-c", CHILD, str(n), str(root)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["maxrss_kb"]


@pytest.mark.slow
def test_peak_memory_flat_in_episode_count(tmp_path):
    small = peak_kb(60, tmp_path / "small")
    large = peak_kb(600, tmp_path / "large")
    # Ten times the episodes. Recording itself is flat; finalize keeps one row group's parquet
    # metadata per episode (lerobot's layout), so allow ~60 KB per extra episode, well under
    # the 0.1+ MB per episode that holding per-episode records and stats would cost.
    assert large - small < 32_000, (small, large)
