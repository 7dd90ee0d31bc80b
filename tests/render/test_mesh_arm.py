"""The mesh arm under a look: pictures change, physics does not (skipped without gymnasium-robotics:
`pip install 'demoforge[mesh-arm]'`)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from demoforge.dataset import open_dataset
from demoforge.execute import generate
from demoforge.execute.shards import InlineVideo
from demoforge.raw.schema import SIM_STATE
from demoforge.render import CameraRecorder, draw_look, look_from_dict, look_seed, look_targets
from demoforge.replay import episode_scene
from demoforge.tasks import generate_family, write_tasks

pytestmark = pytest.mark.skipif(importlib.util.find_spec("gymnasium_robotics") is None,
                                reason="the mesh arm needs gymnasium-robotics (pip install 'demoforge[mesh-arm]')")


def test_recorded_states_are_the_primitive_arms_with_the_mesh_arm_on(full_raw, tmp_path):
    """The conftest's episodes generated again, now recording front videos under a mesh-arm
    look: every sim.state row is byte-identical."""
    (tmp_path / "mesh.yaml").write_text("name: meshy\narm: mesh\nimage: {width: 64, height: 64}\n")
    paths = write_tasks(generate_family("pnp", count=1, seed=11), tmp_path / "tasks")
    pddl = [p for p in paths if p.suffix == ".pddl" and p.name != "blocks.pddl"]
    videos = InlineVideo(cameras=("front",), look=str(tmp_path / "mesh.yaml"))
    meshed = generate(pddl, tmp_path / "run", episodes_per_problem=2, envs=1, seed=4,
                      record_videos=videos).roots["success"]
    a, b = open_dataset(full_raw), open_dataset(meshed)
    assert a.episode_indices == b.episode_indices and len(a.episode_indices) == 2
    assert "observation.images.front" in b.info.features
    for i in a.episode_indices:
        x, y = a.read_episode(i, [SIM_STATE])[SIM_STATE], b.read_episode(i, [SIM_STATE])[SIM_STATE]
        assert x.tobytes() == y.tobytes()


def test_the_mesh_arm_changes_the_pictures_and_renders_the_same_every_time(raw):
    scene = episode_scene(raw, 0)
    frames = {}
    for arm in ("primitives", "mesh", "mesh"):
        look = look_from_dict({"name": "m", "arm": arm, "image": {"width": 96, "height": 96}})
        draw = draw_look(look, look_seed(0, "m", 0, 0), look_targets(scene))
        assert draw.get("arm") == (None if arm == "primitives" else "mesh")  # old draws stay as they were
        with CameraRecorder(scene, draw, ("front", "wrist")) as rec:
            frames.setdefault(arm, []).append(rec.render())
    (prim,), (m1, m2) = frames["primitives"], frames["mesh"]
    for key in prim:
        assert np.array_equal(m1[key], m2[key])
    assert np.abs(m1["observation.images.front"].astype(int) - prim["observation.images.front"]).mean() > 1.0
