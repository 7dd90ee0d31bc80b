"""A dataset rendered with --reference-video loads in the REAL lerobot 0.6.1: every frame is
indexed, and lerobot's episode metadata carries each episode's `demoforge/reference_video`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from demoforge.dataset import check_dataset
from demoforge.execute import generate
from demoforge.render import RenderConfig, parse_look_arg, render_dataset
from demoforge.tasks import generate_family, write_tasks
from lerobot_harness import PROBE_TIMEOUT_S

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.render.conftest import shorten  # noqa: E402

pytestmark = pytest.mark.conformance

TEMPLATE = "refs/episode_{source_episode:06d}_{episode_index}.mp4"
# Run by the lerobot python: load with lerobot's own class, index every frame, print the episodes' column.
READ = textwrap.dedent("""
    import json, sys
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    ds = LeRobotDataset(repo_id="local/x", root=sys.argv[1])
    frames = [ds[i]["episode_index"].item() for i in range(len(ds))]
    episodes = ds.meta.episodes
    print(json.dumps({"frames": frames, "episode_index": list(episodes["episode_index"]),
                      "reference_video": list(episodes["demoforge/reference_video"])}))
""")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("reference_video_conformance")
    paths = write_tasks(generate_family("pnp", count=1, seed=11), base / "tasks")
    pddl = [p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl"]
    full = generate(pddl, base / "run", episodes_per_problem=2, envs=1, seed=4).roots["success"]
    raw = shorten(full, base / "raw", 6)
    config = RenderConfig(looks=(parse_look_arg("plain:2"),), cameras=("front",), reference_video=TEMPLATE)
    out = render_dataset(raw, base / "rendered", config).root
    assert check_dataset(out) == []
    return out


def test_reference_video_paths_load_in_real_lerobot(lerobot_python, rendered, tmp_path):
    home = tmp_path / "hf"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(home / "home"),
           "HF_DATASETS_CACHE": str(home / "datasets"), "HF_LEROBOT_HOME": str(home / "lerobot")}
    proc = subprocess.run([lerobot_python, "-c", READ, str(rendered)], capture_output=True, text=True, env=env,
                          timeout=PROBE_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr[-4000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["frames"] == [e for e in range(4) for _ in range(6)]
    assert got["episode_index"] == [0, 1, 2, 3]
    # stored as demoforge stores every per-episode record: a JSON string
    assert [json.loads(v) for v in got["reference_video"]] == [
        "refs/episode_000000_0.mp4", "refs/episode_000000_1.mp4", "refs/episode_000001_2.mp4",
        "refs/episode_000001_3.mp4"]
