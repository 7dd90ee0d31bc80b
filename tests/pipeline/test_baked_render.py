"""A run that renders and bakes below the native rate renders only the ticks the bake keeps
(pipeline.baked_render): its baked dataset has the data columns rendering every tick and then
baking gives, one video frame per row, and the same look draws."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from demoforge.convert import BakeConfig, bake
from demoforge.convert.episode import BakeError
from demoforge.dataset import check_dataset, open_dataset
from demoforge.dataset.decode import probe_video
from demoforge.dataset.keys import row_extra
from demoforge.dataset.layout import INDEX_FEATURE_NAMES
from demoforge.pipeline import resolve_config, run_pipeline
from demoforge.pipeline.annotate import LABEL_KEYS, annotate_dataset
from demoforge.pipeline.baked_render import bake_ticks, write_baked
from demoforge.render import RenderConfig, parse_look_arg, render_dataset

pytestmark = pytest.mark.slow

HZ = 30


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The pipeline's run (render plain, bake joint_target at 30 Hz) and the slow path on its
    execute/success: render every 60 Hz tick, annotate every tick, then bake at 30 Hz keeping the labels."""
    out = tmp_path_factory.mktemp("baked-render")
    config = resolve_config(None, {"experiment_id": "run", "out_dir": str(out), "smoke_test": True,
                                   "looks": ["plain"], "control_space": "joint_target",
                                   "control_freq": HZ, "workers": 1})
    lines: list[str] = []
    result = run_pipeline(config, echo=lines.append)
    raw = result.run_dir / "execute" / "success"
    render_dataset(raw, out / "rendered60", RenderConfig(looks=(parse_look_arg("plain"),), cameras=("front",), seed=0))
    annotate_dataset(out / "rendered60", out / "annotated60", warn=lines.append)
    slow = bake([out / "annotated60"], out / "slow", BakeConfig(control_space="joint_target", control_freq=HZ,
                                                                 keep=LABEL_KEYS))
    return result, slow, lines


def _data_keys(root):
    return sorted(k for k, f in open_dataset(root).info.features.items()
                  if f.dtype != "video" and k not in INDEX_FEATURE_NAMES)


def test_the_run_renders_only_the_baked_ticks(runs):
    result, _, lines = runs
    run = result.run_dir
    assert result.final == run / "baked" and check_dataset(result.final) == []
    baked, raw = open_dataset(result.final), open_dataset(run / "execute" / "success")
    assert baked.info.fps == HZ and open_dataset(run / "render" / "success").info.fps == HZ
    assert open_dataset(run / "render" / "success").info.total_frames == baked.info.total_frames
    assert baked.info.total_frames < raw.info.total_frames * 0.55  # every second tick (each episode's last too)
    assert json.loads((run / ".pipeline_state" / "render.done").read_text())["ticks"] == "baked"
    # the train split is the raw one, state-only; annotate labels the rendered ticks
    assert open_dataset(run / "dataset" / "train").info.video_keys == []
    assert "only the ticks the bake keeps" in result.notes["render"]
    assert result.notes["annotate"] == "goal labels at baked ticks of render/success, cameras ['front']"
    stamp = json.loads((result.final / "meta" / "bake.json").read_text())
    assert (stamp["control_freq"], stamp["native_freq"], stamp["stride"]) == (HZ, 60, 2)
    assert stamp["kept"] == list(LABEL_KEYS)  # the goal labels annotate gave the rendered ticks
    assert stamp["video"]["cameras"] == ["observation.images.front"] and stamp["rendered"]["cameras"] == ["front"]
    assert all(r["video"] == {"observation.images.front": "rendered"} for r in stamp["sources"][0]["episodes"])
    modality = json.loads((result.final / "meta" / "modality.json").read_text())
    assert list(modality["video"]) == ["front"]


def test_same_data_columns_as_rendering_every_tick_then_baking(runs):
    result, slow, _ = runs
    fast, ref = open_dataset(result.final), open_dataset(slow)
    assert _data_keys(result.final) == _data_keys(slow) == \
        ["action", "goal.action", "goal.position", "goal.visible", "observation.state", "raw_command"]
    assert fast.info.video_keys == ref.info.video_keys
    assert {k: (f.dtype, f.shape, f.names) for k, f in fast.info.features.items() if f.dtype != "video"} == \
        {k: (f.dtype, f.shape, f.names) for k, f in ref.info.features.items() if f.dtype != "video"}
    assert fast.episode_indices == ref.episode_indices
    keys = _data_keys(slow)
    for i in ref.episode_indices:
        a, b = fast.read_episode(i, keys), ref.read_episode(i, keys)
        for k in keys:
            np.testing.assert_array_equal(a[k], b[k], err_msg=f"episode {i} {k}")
        assert row_extra(fast.episode(i), "look") == row_extra(ref.episode(i), "look")
    f, s = (json.loads((root / "meta" / "bake.json").read_text()) for root in (result.final, slow))
    for name in ("control_law", "state", "action", "stride", "config"):
        assert f[name] == s[name], name
    # the slow path re-encodes its 60 Hz videos (and says so); the fast one renders at the baked rate
    assert f["notes"] == [n for n in s["notes"] if " re-encoded, since one frame in 2 is kept" not in n]
    assert len(s["notes"]) == len(f["notes"]) + 1
    strip = ("sha256", "video", "render")  # the slow path hashed its annotated 60 Hz source
    assert [{k: v for k, v in r.items() if k not in strip} for r in f["sources"][0]["episodes"]] == \
        [{k: v for k, v in r.items() if k not in strip} for r in s["sources"][0]["episodes"]]


def test_one_frame_per_row_drawn_at_the_baked_tick(runs):
    result, slow, _ = runs
    fast, ref = open_dataset(result.final), open_dataset(slow)
    key = "observation.images.front"
    for i in fast.episode_indices:
        row = fast.episode(i)
        pts = probe_video(fast.video_path(i, key)).pts_s
        span = (pts >= row[f"videos/{key}/from_timestamp"] - 1e-4) & (pts < row[f"videos/{key}/to_timestamp"] - 1e-4)
        assert span.sum() == row["length"]
        a, b = fast.read_video(i, key).astype(int), ref.read_video(i, key).astype(int)
        # the same states drawn: the frames differ only by the slow path's second encode
        same = np.abs(a - b).mean(axis=(1, 2, 3))
        shifted = np.abs(a[1:] - b[:-1]).mean(axis=(1, 2, 3))
        assert same.max() < 2.0 and same.mean() < shifted.mean(), (same.max(), same.mean(), shifted.mean())


def test_write_baked_refuses_a_render_of_other_ticks(runs, tmp_path):
    result, slow, _ = runs
    run = result.run_dir
    raw, config = run / "execute" / "success", BakeConfig(control_space="joint_target", control_freq=HZ)
    with pytest.raises(BakeError, match="is not a render of the ticks"):
        write_baked(slow.parent / "rendered60", run / "render" / "ticks", raw, tmp_path / "out", config)
    assert not (tmp_path / "out").exists()
    before = (run / "render" / "ticks" / "meta" / "bake.json").stat().st_mtime_ns
    assert bake_ticks(raw, run / "render" / "ticks", config) == run / "render" / "ticks"  # kept, not baked again
    assert (run / "render" / "ticks" / "meta" / "bake.json").stat().st_mtime_ns == before


def test_write_baked_is_a_stage_whose_out_run_stage_guards(runs, tmp_path, monkeypatch):
    from demoforge.stage import runner

    result, _, _ = runs
    run = result.run_dir
    inputs = (run / "annotated", run / "render" / "ticks", run / "execute" / "success")
    config = BakeConfig(control_space="joint_target", control_freq=HZ, keep=LABEL_KEYS)
    seen, guard = [], runner.guard_output_dir

    def spy(out, ins=(), **kw):
        seen.append(out)
        return guard(out, ins, **kw)

    monkeypatch.setattr(runner, "guard_output_dir", spy)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("precious")
    for out, message in ((inputs[1] / "out", f"--out {inputs[1] / 'out'}: lies inside the input {inputs[1]}"),
                         (tmp_path / "full", f"--out {tmp_path / 'full'}: exists and is not empty")):
        with pytest.raises(BakeError, match=re.escape(message)):
            write_baked(*inputs, out, config)
        assert seen[-1] == out
    assert not (inputs[1] / "out").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["full"]
    assert write_baked(*inputs, tmp_path / "baked", config) == tmp_path / "baked"  # the run's bytes again
    for p in (run / "baked").rglob("*"):
        if p.is_file() and "pipeline" not in p.parts:  # the pipeline's provenance is written after the stage
            assert (tmp_path / "baked" / p.relative_to(run / "baked")).read_bytes() == p.read_bytes(), p
    assert sorted(p.name for p in tmp_path.iterdir()) == ["baked", "full"]  # no work folder left
