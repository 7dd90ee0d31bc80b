"""`generate --record-videos`: cameras rendered inline, frame for frame what the render stage
would render from the recorded states."""

import json

import numpy as np
import pytest

from demoforge.dataset import check_dataset, open_dataset
from demoforge.execute import generate
from demoforge.execute.shards import InlineVideo
from demoforge.render import CameraRecorder
from demoforge.replay import episode_scene


@pytest.mark.slow
def test_generate_records_videos_inline(tmp_path):
    from demoforge.tasks import generate_family, write_tasks

    paths = write_tasks(generate_family("stack_three", count=1, seed=3), tmp_path / "problems")
    problem = [p for p in paths if str(p).endswith(".pddl") and "stack_three" in str(p)]
    summary = generate(problem, tmp_path / "run", episodes_per_problem=1, seed=0,
                       record_videos=InlineVideo(cameras=("front",), look="plain", seed=0))
    root = summary.roots["success"] or summary.roots["failure"]
    assert check_dataset(root) == []
    ds = open_dataset(root)
    assert "observation.images.front" in ds.info.video_keys
    row = ds.episode(0)
    draw = json.loads(row["demoforge/look"])
    frames = ds.read_video(0, "observation.images.front")
    assert len(frames) == row["length"]
    # the same frames a replay of the recorded states renders under the recorded look draw
    states = ds.read_episode(0, ["sim.state"])["sim.state"]
    rec = CameraRecorder(episode_scene(root, 0), draw, ("front",))
    try:
        for t in (0, len(states) // 2, len(states) - 1):
            want = rec.render_state(states[t])["observation.images.front"]
            assert np.abs(frames[t].astype(float) - want).mean() / 255 <= 0.05
    finally:
        rec.close()
    # same seed, same bytes
    again = generate(problem, tmp_path / "run2", episodes_per_problem=1, seed=0,
                     record_videos=InlineVideo(cameras=("front",), look="plain", seed=0))
    root2 = again.roots["success"] or again.roots["failure"]
    assert open_dataset(root2).video_path(0, "observation.images.front").read_bytes() == \
        ds.video_path(0, "observation.images.front").read_bytes()
