"""Annotate: goal.action from the recorded plan, goal.position against the block's pixels in a
segmentation render under a randomized look (camera offsets), videos copied untouched."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from demoforge.dataset import check_dataset, open_dataset
from demoforge.execute import generate
from demoforge.pipeline.annotate import (
    ACTION_KEY,
    POSITION_KEY,
    annotate_dataset,
    frame_steps,
    operator_text,
)
from demoforge.render import RenderConfig, parse_look_arg, render_dataset, segmentation_colour
from demoforge.replay import episode_scene
from demoforge.tasks import generate_family, write_tasks

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.render.conftest import shorten  # noqa: E402


def test_operator_text_and_frame_steps():
    assert operator_text("pick-up", ["red"]) == "pick red"
    assert operator_text("stack", ["red", "blue"]) == "stack red on blue"
    assert operator_text("wave", ["a", "b"]) == "wave a b"
    plan = [{"operator": "stack", "args": ["a", "b"], "ticks": [5, 9]},
            {"operator": "pick-up", "args": ["a"], "ticks": [2, 5]}]
    steps = frame_steps(plan, 12)
    assert [s["operator"] for s in steps] == ["pick-up"] * 5 + ["stack"] * 7
    assert frame_steps([], 3) == [None, None, None]


@pytest.mark.slow
def test_positions_match_segmentation_under_camera_jitter(tmp_path):
    paths = write_tasks(generate_family("stack_three", count=1, seed=0), tmp_path / "tasks")
    pddl = [p for p in paths if p.name != "blocks.pddl" and p.suffix == ".pddl"]
    raw = generate(pddl, tmp_path / "run", episodes_per_problem=1, envs=1, seed=0).roots["success"]
    short = shorten(raw, tmp_path / "short", 24)
    config = RenderConfig(looks=(parse_look_arg("randomized:2"),), cameras=("front",), segmentation=True, seed=3)
    rendered = render_dataset(short, tmp_path / "rendered", config).root
    out = tmp_path / "annotated"
    assert annotate_dataset(rendered, out) == {"annotated": True, "episodes": 2, "cameras": ["front"],
                                               "rows": "every tick"}
    assert check_dataset(out) == []
    src, ds = open_dataset(rendered), open_dataset(out)
    checked = 0
    for i in ds.episode_indices:
        row = ds.episode(i)
        draw = json.loads(row["demoforge/look"])
        assert draw.get("cameras"), "the randomized look should move the cameras"
        cols = ds.read_episode(i, [ACTION_KEY, POSITION_KEY])
        steps = frame_steps(json.loads(row["demoforge/plan"]), row["length"])
        assert cols[ACTION_KEY].tolist() == [operator_text(s["operator"], s["args"]) for s in steps]
        seg = ds.read_video(i, "observation.images.front_segmentation")
        np.testing.assert_array_equal(seg, src.read_video(i, "observation.images.front_segmentation"))
        scene = episode_scene(rendered, i)
        palette = np.array([segmentation_colour(b) for b in range(-1, scene.model.nbody)], float)
        m = scene.model
        fingers = {int(m.jnt_bodyid[j]) for j in range(m.njnt) if m.jnt_qposadr[j] in set(scene.robot.finger_qpos)}
        hand = sorted(fingers | {int(m.body_parentid[b]) for b in fingers})  # the bodies that hold a block
        for t, step in enumerate(steps):
            # each pixel belongs to the body of the nearest palette colour (the video is lossy)
            dist = np.linalg.norm(seg[t][:, :, None, :].astype(float) - palette[None, None], axis=-1)
            mask = (dist.argmin(axis=-1) - 1 == scene.props[step["args"][0]]) & (dist.min(axis=-1) < 40)
            # chroma-subsampled edges between other bodies can land near the block's colour:
            # only pixels within 16 px of the annotation count, and there must be a block's worth
            got = cols[POSITION_KEY][t]
            vv, uu = np.mgrid[:mask.shape[0], :mask.shape[1]]
            mask &= (np.abs(uu + 0.5 - got[0]) < 16) & (np.abs(vv + 0.5 - got[1]) < 16)
            if mask.sum() < 15:
                continue  # hidden behind the gripper
            hand_px = np.isin(dist.argmin(axis=-1) - 1, hand) & (dist.min(axis=-1) < 40)
            near = np.zeros_like(mask)  # the block's pixels grown by 2 px
            for dv in range(-2, 3):
                for du in range(-2, 3):
                    near |= np.roll(mask, (dv, du), axis=(0, 1))
            if (near & hand_px).any():
                continue  # partly hidden by the fingers: the visible part's centroid is not the block's
            v, u = np.nonzero(mask)
            centroid = np.array([u.mean() + 0.5, v.mean() + 0.5])
            # the annotation is the projected block centre, the centroid that of its visible faces
            # (top and front): they differ by up to half the block's size in the image, which the
            # close front camera makes ~20 px; the centre must lie inside the block's silhouette
            half = 0.5 * np.array([np.ptp(u) + 1, np.ptp(v) + 1])
            assert (np.abs(centroid - got) <= np.maximum(half, 3.0)).all(), (i, t, centroid, got, half)
            checked += 1
    assert checked >= 16


@pytest.mark.slow
def test_positions_equal_a_direct_projection_through_the_look_camera(tmp_path):
    from demoforge.render import look_scene
    from demoforge.replay import replay_states
    from demoforge.sim.cameras import CameraRig

    paths = write_tasks(generate_family("stack_three", count=1, seed=0), tmp_path / "tasks")
    pddl = [p for p in paths if p.name != "blocks.pddl" and p.suffix == ".pddl"]
    raw = generate(pddl, tmp_path / "run", episodes_per_problem=1, envs=1, seed=0).roots["success"]
    short = shorten(raw, tmp_path / "short", 8)
    config = RenderConfig(looks=(parse_look_arg("randomized:2"),), cameras=("front",), seed=5)
    rendered = render_dataset(short, tmp_path / "rendered", config).root
    out = tmp_path / "annotated"
    annotate_dataset(rendered, out)
    ds = open_dataset(out)
    moved = 0.0
    for i in ds.episode_indices:
        row = ds.episode(i)
        got = ds.read_episode(i, [POSITION_KEY])[POSITION_KEY]
        steps = frame_steps(json.loads(row["demoforge/plan"]), row["length"])
        plain = episode_scene(rendered, i)
        scene = look_scene(episode_scene(rendered, i), json.loads(row["demoforge/look"]))
        with CameraRig(scene.model, scene.cameras) as rig, CameraRig(plain.model, plain.cameras) as rig0:
            for t, (sc, _) in enumerate(zip(replay_states(rendered, i, scene), replay_states(rendered, i, plain))):
                body = scene.props[steps[t]["args"][0]]
                want, _ = rig.project(sc.data, "front", sc.data.xpos[body][None])
                np.testing.assert_allclose(got[t], want[0], atol=1e-3)
                unjittered, _ = rig0.project(plain.data, "front", plain.data.xpos[body][None])
                moved = max(moved, float(np.abs(unjittered[0] - want[0]).max()))
    assert moved > 0.5, "the look's camera offsets should move the projection"
