"""Goal labels at any rate: `demoforge run` bakes the annotated dataset, so RUN/baked carries
goal.action, goal.position and goal.visible at 60 Hz (every tick rendered and labelled) and at
30 and 15 Hz (only the baked ticks rendered, labelled at those rows); the labels at a low rate are
the 60 Hz labels at the kept ticks, and each position lands (within 1 px) on a marker rendered at the target's
centre through the episode's own (plain or jittered) camera."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.convert.conventions import output_ticks
from demoforge.dataset import check_dataset, open_dataset
from demoforge.dataset.keys import row_extra
from demoforge.pipeline.annotate import (
    ACTION_KEY,
    NO_PIXEL,
    POSITION_KEY,
    VISIBLE_KEY,
    annotate_dataset,
    frame_steps,
    in_view,
    native_ticks,
    operator_text,
)
from demoforge.pipeline.config import PipelineError

CAMERAS = ("front", "wrist")
LOOKS = ("plain", "randomized:1")  # one episode drawn plainly, one under a jittered camera
# The smoke run's scene, one episode of it, two cameras and the labels asked for by name, as the user does.
CONFIG = """\
workers: 1
tasks: {{problems: 1, block_size: [0.04, 0.04], table_height_offset: [0.0, 0.0], friction: [0.9, 0.9]}}
scenes: {{reset_states: 1, profiles: 1}}
execute: {{episodes_per_problem: 1, envs: 1, randomization: null, randomize: []}}
render: {{looks: [plain, "randomized:1"], cameras: [front, wrist]}}
bake: {{control_space: joint_target, control_freq: {hz}, keep: [goal.action, goal.position]}}
"""
LABELS = [ACTION_KEY, POSITION_KEY, VISIBLE_KEY]
RADIUS_PX = 3.0  # the marker's radius in the image [px]: small beside a block, big enough to place


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """`run(hz)`: RUN of `demoforge run` on CONFIG baked at `hz` (each rate run once)."""
    out, done = tmp_path_factory.mktemp("labels"), {}

    def at(hz: int):
        if hz not in done:
            cfg = out / f"run{hz}.yaml"
            cfg.write_text(CONFIG.format(hz=hz), encoding="utf-8")
            res = CliRunner().invoke(app, ["run", "--experiment-id", f"r{hz}", "--out-dir", str(out),
                                           "--config", str(cfg)])
            assert res.exit_code == 0, res.output
            done[hz] = out / f"r{hz}"
        return done[hz]

    return at


def _labels(root, episode: int) -> dict[str, np.ndarray]:
    return open_dataset(root).read_episode(episode, LABELS)


def _native(run_dir, hz: int, row: dict) -> tuple[dict, np.ndarray]:
    """The raw episode row of a baked (or annotated) episode `row` of the run at `hz`, and the native
    tick of each of its rows."""
    raw = open_dataset(run_dir / "execute" / "success")
    source = row_extra(row, "render_source")["episode_index"]
    if hz < 60:  # rendered from RUN/render/ticks, a bake of execute/success
        source = row_extra(open_dataset(run_dir / "render" / "ticks").episode(source), "bake_source")["episode_index"]
    native = raw.episode(source)
    return native, output_ticks(native["length"], 60 // hz)


@pytest.mark.slow
@pytest.mark.parametrize("hz", [60, 30, 15])
def test_run_bakes_the_goal_labels(run, hz):
    root = run(hz)
    baked = open_dataset(root / "baked")
    assert check_dataset(root / "baked") == [] and baked.info.fps == hz
    feats = baked.info.features
    assert feats[ACTION_KEY].dtype == "string"
    assert (feats[POSITION_KEY].dtype, feats[POSITION_KEY].names) == \
        ("float32", ["front.u", "front.v", "wrist.u", "wrist.v"])
    assert (feats[VISIBLE_KEY].dtype, feats[VISIBLE_KEY].names) == ("bool", list(CAMERAS))
    stamp = json.loads((root / "baked" / "meta" / "bake.json").read_text())
    assert stamp["kept"] == LABELS and stamp["config"]["keep"] == LABELS
    # below 60 Hz only the kept ticks are rendered, and labelled there; at 60 Hz every tick is
    assert json.loads((root / ".pipeline_state" / "render.done").read_text())["ticks"] == \
        ("native" if hz == 60 else "baked")
    raw = open_dataset(root / "execute" / "success")
    assert baked.info.total_episodes == 2 * raw.info.total_episodes  # two looks
    seen = []
    for i in baked.episode_indices:
        row = baked.episode(i)
        native, ticks = _native(root, hz, row)
        assert len(ticks) == row["length"]
        steps = frame_steps(row_extra(native, "plan"), native["length"])
        got = _labels(root / "baked", i)
        # goal.action: the plan step in force at each row's native tick
        assert got[ACTION_KEY].tolist() == [operator_text(steps[t]["operator"], steps[t]["args"]) for t in ticks]
        assert np.isfinite(got[POSITION_KEY]).all()
        for k, cam in enumerate(CAMERAS):
            uv, h, w = got[POSITION_KEY][:, 2 * k:2 * k + 2], *feats[f"observation.images.{cam}"].shape[:2]
            inside = (uv[:, 0] >= 0) & (uv[:, 0] < w) & (uv[:, 1] >= 0) & (uv[:, 1] < h)
            np.testing.assert_array_equal(got[VISIBLE_KEY][:, k], inside, err_msg=f"episode {i} {cam}")
        seen.append(got[VISIBLE_KEY])
    seen = np.concatenate(seen)
    # the front camera sees every target; the wrist camera loses the block it holds off its image's edge
    assert seen[:, 0].all() and 0.1 < seen[:, 1].mean() < 0.9, seen.mean(axis=0)


@pytest.mark.slow
@pytest.mark.parametrize("hz", [30, 15])
def test_labels_at_a_low_rate_are_the_60_hz_labels_at_the_kept_ticks(run, hz):
    """Labelled at the rendered baked ticks or at every tick and sampled: the same numbers."""
    low, full = open_dataset(run(hz) / "baked"), open_dataset(run(60) / "baked")
    assert low.episode_indices == full.episode_indices
    for i in low.episode_indices:
        assert row_extra(low.episode(i), "look") == row_extra(full.episode(i), "look")
        ticks = output_ticks(full.episode(i)["length"], 60 // hz)
        a, b = _labels(run(hz) / "baked", i), _labels(run(60) / "baked", i)
        for key in LABELS:
            np.testing.assert_array_equal(a[key], b[key][ticks], err_msg=f"{hz} Hz episode {i} {key}")


def _marker(recorder, body: int, camera: str, radius_m: float):
    """The centroid [px] and pixel count of a magenta sphere of `radius_m` drawn at `body`'s centre
    in place of the body's geoms, in `camera`'s image (the frame without the body subtracted);
    None when none shows or the image's edge cuts it."""
    from demoforge.render.recorder import camera_key

    m = recorder.scene.model
    geoms = np.flatnonzero(m.geom_bodyid == body)
    saved = [a[geoms].copy() for a in (m.geom_rgba, m.geom_size, m.geom_matid, m.geom_type, m.geom_pos)]
    try:
        m.geom_rgba[geoms, 3] = 0.0  # a geom of alpha 0 is not drawn
        hidden = recorder.render()[camera_key(camera)].astype(int)
        m.geom_rgba[geoms] = (1.0, 0.0, 1.0, 1.0)
        m.geom_matid[geoms] = -1
        m.geom_type[geoms] = 2  # mjGEOM_SPHERE
        m.geom_size[geoms] = (radius_m, 0.0, 0.0)
        m.geom_pos[geoms] = 0.0
        marked = recorder.render()[camera_key(camera)].astype(int)
    finally:
        for a, v in zip((m.geom_rgba, m.geom_size, m.geom_matid, m.geom_type, m.geom_pos), saved, strict=True):
            a[geoms] = v
    r, g, b = marked[..., 0], marked[..., 1], marked[..., 2]
    mask = (np.abs(marked - hidden).sum(-1) > 60) & (r > g + 40) & (b > g + 40)  # magenta, not its shadow
    if not mask.any() or mask[0].any() or mask[-1].any() or mask[:, 0].any() or mask[:, -1].any():
        return None, 0  # none, or cut by the image's edge
    v, u = np.nonzero(mask)
    return np.array([u.mean() + 0.5, v.mean() + 0.5]), int(mask.sum())


@pytest.mark.slow
@pytest.mark.parametrize("hz", [60, 30])
def test_positions_land_on_a_marker_rendered_at_the_target(run, hz):
    """goal.position of RUN/baked against a magenta sphere drawn at the target's centre by the
    render stage's recorder from the row's recorded state and the episode's look draw."""
    from demoforge.render.recorder import CameraRecorder
    from demoforge.replay import episode_scene, replay_states
    from demoforge.sim.cameras import intrinsics, project, world_T_camera

    root = run(hz)
    annotated, baked = open_dataset(root / "annotated"), open_dataset(root / "baked")
    checked, moved = {c: 0 for c in CAMERAS}, 0.0
    for i in baked.episode_indices:
        row = annotated.episode(i)
        assert baked.episode(i)["length"] == row["length"]  # baked rows are the annotated rows, one to one
        draw = row_extra(row, "look")
        jittered = bool(draw.get("cameras"))
        assert jittered == (row_extra(row, "render_source")["look"] == "randomized")
        got = _labels(root / "baked", i)
        native, ticks = _native(root, hz, row)
        steps = frame_steps(row_extra(native, "plan"), native["length"])
        plain = episode_scene(root / "annotated", i)
        sample = set(np.linspace(0, row["length"] - 1, 48).round().astype(int).tolist())
        with CameraRecorder(episode_scene(root / "annotated", i), draw, CAMERAS) as rec:
            states = zip(replay_states(root / "annotated", i, rec.scene), replay_states(root / "annotated", i, plain))
            for t, (sc, sc0) in enumerate(states):
                if t not in sample:
                    continue
                body = sc.props[steps[ticks[t]]["args"][0]]
                for k, cam in enumerate(CAMERAS):
                    want = got[POSITION_KEY][t, 2 * k:2 * k + 2]
                    w, h = rec.sizes[cam]
                    intr = intrinsics(rec.scene.model, rec.scene.cameras[cam], w, h)
                    _, depth = project(sc.data.xpos[body][None], intr, world_T_camera(sc.data, rec.scene.cameras[cam]))
                    if depth[0] <= 0:
                        continue
                    radius = RADIUS_PX * depth[0] / intr.fy  # [m]: a sphere RADIUS_PX wide at this distance
                    seen, count = _marker(rec, body, cam, radius)
                    if seen is None or count < 0.7 * np.pi * RADIUS_PX ** 2:
                        continue  # behind the fingers or the image's edge
                    assert got[VISIBLE_KEY][t, k]
                    np.testing.assert_allclose(want, seen, atol=1.0, err_msg=f"episode {i} row {t} {cam}")
                    checked[cam] += 1
                    if jittered:  # the same state through the unjittered camera lands elsewhere
                        cam0 = plain.cameras[cam]
                        uv0, _ = project(sc0.data.xpos[body][None], intrinsics(plain.model, cam0, w, h),
                                         world_T_camera(sc0.data, cam0))
                        moved = max(moved, float(np.abs(uv0[0] - want).max()))
    assert checked["front"] >= 10 and checked["wrist"] >= 10, checked
    assert moved > 2.0, "the look's camera jitter should move the target by more than the tolerance"


def test_visibility_needs_the_image_and_the_front_of_the_camera():
    uv = np.array([[0.0, 0.0], [223.99, 223.99], [224.0, 10.0], [10.0, -0.01], [10.0, 10.0], [10.0, 10.0],
                   [np.nan, np.nan]])
    depth = np.array([1.0, 1.0, 1.0, 1.0, -1.0, 0.005, -0.0])
    assert in_view(uv, depth, 224, 224, near=0.01).tolist() == [True, True, False, False, False, False, False]
    assert NO_PIXEL == (-1.0, -1.0)


def test_native_ticks_place_rows_by_their_recorded_state():
    states = np.arange(20, dtype=float).reshape(10, 2)
    assert native_ticks(states, states[[0, 3, 9]], "x").tolist() == [0, 3, 9]
    with pytest.raises(PipelineError, match=r"x: rows \[1\] \(1 in all\) hold sim.state values the native"):
        native_ticks(states, np.stack([states[0], states[0] + 0.5]), "x")
    with pytest.raises(PipelineError, match="do not increase"):
        native_ticks(states, states[[3, 1]], "x")


@pytest.mark.slow
def test_a_render_of_baked_ticks_needs_its_native_dataset(run, tmp_path):
    """Without the raw dataset, the plan's native tick ranges would be read as the baked rows."""
    root = run(30)
    with pytest.raises(PipelineError, match=r"sampled by a bake \(bake_source .*pass native= the dataset"):
        annotate_dataset(root / "render" / "success", tmp_path / "a", warn=lambda s: None)
    with pytest.raises(PipelineError, match=r"already has \['goal.action', 'goal.position', 'goal.visible'\]"):
        annotate_dataset(root / "annotated", tmp_path / "b", warn=lambda s: None)


@pytest.mark.slow
def test_write_baked_refuses_labels_the_render_lacks(run, tmp_path):
    from demoforge.convert import BakeConfig
    from demoforge.convert.episode import BakeError
    from demoforge.pipeline.baked_render import write_baked

    root = run(30)
    config = BakeConfig(control_space="joint_target", control_freq=30, keep=("goal.visible",))
    with pytest.raises(BakeError, match=r"--keep \['goal.visible'\]: .* has no such columns \(no goal labels\); the "
                                        "annotate stage adds them"):
        write_baked(root / "render" / "success", root / "render" / "ticks", root / "execute" / "success",
                    tmp_path / "out", config)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_baking_fewer_cameras_cuts_the_per_camera_labels_to_them(run, tmp_path):
    """`bake --cams front` keeps goal.position's and goal.visible's front columns only: no label
    names a camera the baked dataset does not have. The values are the full bake's front columns."""
    from demoforge.convert import BakeConfig, bake

    source = run(60) / "annotated"
    both = bake([source], tmp_path / "both", BakeConfig(control_freq=30, keep=tuple(LABELS)))
    front = bake([source], tmp_path / "front", BakeConfig(control_freq=30, keep=tuple(LABELS), cams=("front",)))
    feats = open_dataset(front).info.features
    assert feats[POSITION_KEY].names == ["front.u", "front.v"] and feats[POSITION_KEY].shape == (2,)
    assert feats[VISIBLE_KEY].names == ["front"] and not any("wrist" in k for k in feats)
    assert check_dataset(front) == []
    for i in open_dataset(front).episode_indices:
        cut, full = _labels(front, i), _labels(both, i)
        np.testing.assert_array_equal(cut[POSITION_KEY], full[POSITION_KEY][:, :2])
        np.testing.assert_array_equal(cut[VISIBLE_KEY].reshape(-1, 1), full[VISIBLE_KEY][:, :1])  # (T,): one camera
        assert cut[ACTION_KEY].tolist() == full[ACTION_KEY].tolist()
