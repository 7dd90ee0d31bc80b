"""The render stage end to end on a tiny raw dataset: a new checked dataset with the source's
columns and records plus camera videos and look draws; the source untouched; any worker
count gives the same bytes; the recorded draw reproduces the frames."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.dataset import check_dataset, open_dataset
from demoforge.dataset.layout import DEMOFORGE_META_DIR, INDEX_FEATURE_NAMES
from demoforge.render import (
    CameraRecorder, LookError, RenderConfig, draw_look, load_look, look_from_dict, look_seed, look_targets,
    parse_look_arg, render_dataset,
)
from demoforge.render.config import LookRequest
from demoforge.replay import episode_scene, replay_states

CAMS = ("observation.images.front", "observation.images.wrist")


def digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def rendered(raw, tmp_path_factory) -> Path:
    before = digest(raw)
    config = RenderConfig(looks=(parse_look_arg("plain"), parse_look_arg("randomized:2")), seed=3)
    summary = render_dataset(raw, tmp_path_factory.mktemp("rendered") / "out", config)
    assert digest(raw) == before  # the source is never modified
    assert (summary.episodes, summary.frames) == (6, 6 * 16)
    return summary.root


def test_output_has_source_columns_records_and_videos(raw, rendered):
    assert check_dataset(rendered) == []
    src, out = open_dataset(raw), open_dataset(rendered)
    keys = [k for k in src.info.features if k not in INDEX_FEATURE_NAMES]
    assert list(out.info.features)[:len(keys)] == keys and out.info.video_keys == list(CAMS)
    assert out.info.features[CAMS[0]].shape == (224, 224, 3)
    order = [(0, "plain", 0), (0, "randomized", 0), (0, "randomized", 1),
             (1, "plain", 0), (1, "randomized", 0), (1, "randomized", 1)]
    for k, (episode, look, copy) in enumerate(order):
        row, src_row = out.episode(k), src.episode(episode)
        assert json.loads(row["demoforge/render_source"]) == {"episode_index": episode, "look": look, "copy": copy}
        assert json.loads(row["demoforge/look"])["look"] == look
        for name in ("problem", "scene_draw", "plan", "seed"):
            assert row[f"demoforge/{name}"] == src_row[f"demoforge/{name}"]
        assert row["tasks"] == src_row["tasks"]
        a, b = out.read_episode(k, keys), src.read_episode(episode, keys)
        for key in keys:
            assert np.array_equal(a[key], b[key], equal_nan=True)
        assert out.read_video(k, CAMS[0]).shape == (16, 224, 224, 3)
    meta = json.loads((rendered / DEMOFORGE_META_DIR / "render.json").read_text())
    assert [(e["source_episode"], e["look"], e["copy"]) for e in meta["episodes"]] == order
    assert not (rendered / DEMOFORGE_META_DIR / "merge.json").exists()
    # the output is itself replayable: scene inputs and records came along
    assert episode_scene(rendered, 4).model.nq == episode_scene(raw, 1).model.nq


def test_copies_differ_and_the_recorded_draw_reproduces_the_frames(raw, rendered):
    out = open_dataset(rendered)
    plain, copy0, copy1 = (out.read_video(k, CAMS[0]) for k in (3, 4, 5))
    assert np.mean(np.abs(copy0.astype(int) - copy1)) > 5 and np.mean(np.abs(plain.astype(int) - copy0)) > 5
    draw = json.loads(out.episode(5)["demoforge/look"])
    scene = episode_scene(raw, 1)
    look = load_look("randomized")
    assert draw == draw_look(look, look_seed(3, "randomized", 1, 1), look_targets(scene))
    with CameraRecorder(scene, draw, ("front", "wrist")) as rec:
        frames = np.stack([rec.render()[CAMS[0]] for _ in replay_states(raw, 1, rec.scene)])
    loss = np.mean(np.abs(frames.astype(int) - copy1))  # only the video codec's loss
    assert loss < 5.0 and loss < 0.3 * np.mean(np.abs(frames.astype(int) - copy0))


def test_any_worker_count_gives_the_same_bytes(raw, tmp_path):
    config = RenderConfig(looks=(parse_look_arg("randomized"),), cameras=("front",), depth=True, seed=1)
    seen: dict[int, list] = {1: [], 2: []}
    def progress(workers):
        return lambda e: seen[workers].append((e.done, e.total)) if e.kind == "episode" else None

    one = render_dataset(raw, tmp_path / "one", config, workers=1, progress=progress(1))
    two = render_dataset(raw, tmp_path / "two", config, workers=2, progress=progress(2))
    assert digest(one.root) == digest(two.root)
    assert seen[1] == [(1, 2), (2, 2)]  # after each written episode
    assert sorted(seen[2]) == [(1, 2), (2, 2)]  # from both slots
    ds = open_dataset(two.root)
    assert ds.info.features["observation.images.front_depth"].info["is_depth_map"] is True
    with CameraRecorder(episode_scene(raw, 1), json.loads(ds.episode(1)["demoforge/look"]), ("front",), depth=True) as rec:
        depth = np.stack([rec.render()["observation.images.front_depth"] for _ in replay_states(raw, 1, rec.scene)])
    stored = ds.read_video(1, "observation.images.front_depth")
    # lossless 12-bit log codes: under 2 mm error at the table's distance
    assert np.abs(stored.reshape(depth.shape) - depth)[depth < 2.0].max() < 0.002


def test_refusals(raw, rendered, tmp_path):
    plain = parse_look_arg("plain")
    small = LookRequest(look_from_dict({"name": "small", "image": {"width": 64, "height": 64}}))
    cases = [
        (RenderConfig(looks=(plain, plain)), tmp_path / "a", raw, "given twice"),
        (RenderConfig(looks=(plain, small)), tmp_path / "b", raw, "camera 'front' different image sizes"),
        (RenderConfig(looks=()), tmp_path / "c", raw, "no looks given"),
        (RenderConfig(looks=(plain,)), rendered, raw, "not empty"),
        (RenderConfig(looks=(plain,)), raw / "inside", raw, "lies inside the input"),
        (RenderConfig(looks=(plain,)), tmp_path / "d", rendered, "already has video features"),
    ]
    for config, out, source, message in cases:
        with pytest.raises(LookError, match=message):
            render_dataset(source, out, config)
    with pytest.raises(LookError, match="cameras"):
        render_dataset(raw, tmp_path / "e", RenderConfig(looks=(plain,), cameras=("top",)))


def test_cli(raw, tmp_path):
    result = CliRunner().invoke(app, ["render", str(raw), "--look", "plain", "--cameras", "front,wrist",
                                      "--segmentation", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "rendered 2 episodes, 32 frames x 2 cameras" in result.output
    assert "render: 2/2 episodes" in result.output  # progress on stderr: plain lines, not a terminal
    keys = open_dataset(tmp_path / "out").info.video_keys
    assert keys == [*CAMS, "observation.images.front_segmentation", "observation.images.wrist_segmentation"]
    bad = CliRunner().invoke(app, ["render", str(raw), "--look", "nope.yaml", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "cannot read look nope.yaml" in bad.output


def test_episodes_subset_renders_as_in_the_full_run(raw, rendered, tmp_path):
    result = CliRunner().invoke(app, ["render", str(raw), "--look", "plain", "--look", "randomized:2", "--seed", "3",
                                      "--episodes", "1", "--quiet", "--out", str(tmp_path / "one")])
    assert result.exit_code == 0, result.output
    assert "rendered 3 episodes" in result.output and "render:" not in result.output
    sub, full = open_dataset(tmp_path / "one"), open_dataset(rendered)
    for k in range(3):
        assert sub.episode(k)["demoforge/look"] == full.episode(3 + k)["demoforge/look"]
        assert np.array_equal(sub.read_video(k, CAMS[0]), full.read_video(3 + k, CAMS[0]))
    with pytest.raises(LookError, match=r"no episodes \[7\] in the dataset; it has 2 episodes, indices 0..1"):
        render_dataset(raw, tmp_path / "two", RenderConfig(looks=(parse_look_arg("plain"),), episodes=(1, 7)))


class Killed(Exception):
    pass


@pytest.mark.parametrize("workers", [1, 2])
def test_a_killed_run_continues_to_the_same_bytes(raw, tmp_path, monkeypatch, workers):
    config = RenderConfig(looks=(parse_look_arg("randomized:2"),), cameras=("front",), seed=5)
    reference = render_dataset(raw, tmp_path / "ref", config)
    if workers == 2:
        # a shard killed in its worker process cannot be simulated here; kill the merge instead, after
        # the one item's dataset was moved into the work folder's merged root (4 episodes: one item)
        import demoforge.render.stage as stage

        def killed_meta(*args, **kwargs):
            raise Killed

        monkeypatch.setattr(stage, "_copy_meta", killed_meta)
        with pytest.raises(Killed):
            render_dataset(raw, tmp_path / "run", config, workers=2)
        monkeypatch.undo()
        shards = sorted(p.name for p in (tmp_path / ".run.render-shards" / ".shards").iterdir())
        assert shards == ["0000-episodes-0-3"]  # the item is final and kept
        assert (tmp_path / ".run.render-shards" / ".shards" / shards[0] / "done.json").is_file()
        assert (tmp_path / ".run.render-shards" / "merged" / "meta" / "info.json").is_file()
    else:
        from demoforge.dataset import DatasetWriter

        calls = []
        original = DatasetWriter.add_frame

        def add_frame(self, frame, *, task):
            calls.append(1)
            if len(calls) == 16 * 2 + 5:  # in the third episode: two are durable
                raise Killed
            return original(self, frame, task=task)

        monkeypatch.setattr(DatasetWriter, "add_frame", add_frame)
        with pytest.raises(Killed):
            render_dataset(raw, tmp_path / "run", config)
        monkeypatch.undo()
        shards = tmp_path / ".run.render-shards" / ".shards"
        # four episodes make one item (chunks of at least 4): it resumes after its two durable episodes
        assert [(p.name, (p / "done.json").is_file()) for p in sorted(shards.iterdir())] == [
            ("0000-episodes-0-3", False)]
        assert len(list(shards.glob("0000-episodes-0-3/data/.demoforge-staging/episodes/*.json"))) == 2
        assert not (tmp_path / "run").exists()  # the output appears whole or not at all
    resumed = render_dataset(raw, tmp_path / "run", config, workers=workers)
    assert resumed.episodes == 4 and resumed.frames == 64
    assert digest(resumed.root) == digest(reference.root)
    assert not (tmp_path / ".run.render-shards").exists()
