"""eval-batch: policies x checkpoints x tasks from one spec; a limit, resume to the same bytes,
re-scoring without running, and spec errors named before anything runs."""

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from demoforge.policy import PolicyError
from demoforge.policy.batch import load_batch, run_batch


def _spec(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "batch.yaml").write_text(text, encoding="utf-8")
    return folder / "batch.yaml"


@pytest.fixture
def batch(pnp, expert_data, tmp_path) -> Path:
    shutil.copy(pnp, tmp_path / "p.pddl")
    shutil.copy(pnp.with_suffix("").with_suffix(".scene.json"), tmp_path / "p.scene.json")
    return _spec(tmp_path, f"""
policies:
  expert: {{spec: expert}}
  hold: {{spec: "tests.policy.scripted:hold"}}
tasks:
  mine: {{problems: [p.pddl], episodes: 2}}
  recorded: {{from_dataset: {expert_data}, start: "first,random"}}
reference:
  mine: {{success_rate: 0.9}}
settings: {{max_ticks: 900, envs: 2}}
""")


def test_a_batch_resumes_to_the_same_bytes_and_rescores_without_running(batch, tmp_path):
    full = run_batch(load_batch(batch), tmp_path / "full")
    assert full["policies"]["expert"]["tasks"]["mine"]["success_rate"] == 1.0
    assert full["policies"]["expert"]["tasks"]["recorded"]["episodes"] == 4  # 2 episodes x (first, random)
    assert full["policies"]["expert"]["total"]["success_rate"] == 1.0
    # (hold's total is not 0: a late random start may still end in success)
    assert full["policies"]["hold"]["tasks"]["mine"]["success_rate"] == 0.0
    md = (tmp_path / "full" / "SUMMARY.md").read_text()
    assert "| mine | 2 | 1.000 (ref 0.900) |" in md and "## hold" in md

    part = tmp_path / "part"
    first = run_batch(load_batch(batch), part, limit=1)
    assert [t["status"] for p in first["policies"].values() for t in p["tasks"].values()] == \
        ["done", "pending", "pending", "pending"]
    assert "| recorded | pending |" in (part / "SUMMARY.md").read_text()
    # a run killed half-way: its dataset unfinished, no summary; the rerun starts it over
    killed = part / "runs" / "expert" / "recorded"
    full_data = tmp_path / "full" / "runs" / "expert" / "recorded" / "dataset" / "data"
    shutil.copytree(full_data, killed / "dataset" / "data")
    run_batch(load_batch(batch), part)
    for name in ("summary.json", "SUMMARY.md"):
        assert (part / name).read_bytes() == (tmp_path / "full" / name).read_bytes()

    (part / "runs" / "hold" / "mine" / "summary.json").unlink()  # as if that run had never finished
    rescored = run_batch(load_batch(batch), part, score_only=True)
    assert rescored["policies"]["hold"]["tasks"]["mine"] == {"status": "pending"}
    assert not (part / "runs" / "hold" / "mine" / "summary.json").exists()  # nothing ran


def test_checkpoints_expand_into_runs(tmp_path):
    spec = _spec(tmp_path, """
policies:
  act: {spec: "my.py:make", args: {path: "ck/{checkpoint}/model"}, checkpoints: [3000, 6000]}
tasks:
  pnp: {family: pnp, count: 2, seed: 7}
""")
    runs = load_batch(spec).policies
    assert [(p.name, p.args) for p in runs] == [("act@3000", {"path": "ck/3000/model"}),
                                                 ("act@6000", {"path": "ck/6000/model"})]


@pytest.mark.parametrize("text, needle", [
    ("policies: {a: {spec: expert}}\ntasks: {t: {family: towers}}\n", "tasks.t.family"),
    ("policies: {a: {spec: expert}}\ntasks: {t: {problems: [none.pddl]}}\n", "none.pddl"),
    ("policies: {a: {spec: expert}}\ntasks: {t: {family: pnp, problems: [x]}}\n", "exactly one of"),
    ("policies: {a: {spec: expert}}\ntasks: {t: {family: pnp, count: 0}}\n", "count"),
    ("policies: {a: {spec: expert}}\ntasks: {t: {family: pnp, colour: red}}\n", "colour"),
    ("policies: {a: {spec: x.py:f, checkpoints: [1]}}\ntasks: {t: {family: pnp}}\n", "{checkpoint}"),
    ("policies: {a: {spec: expert, like: nowhere}}\ntasks: {t: {family: pnp}}\n", "policies.a.like"),
    ("policies: {a: {spec: expert}}\ntasks: {t: {family: pnp}}\nsettings: {envs: 0}\n", "settings"),
    ("policies: {a: {spec: expert}}\ntasks: {t: {family: pnp}}\nreference: {u: {success_rate: 1}}\n", "reference"),
    ("policies: {a: {spec: expert}}\ntask: {t: {family: pnp}}\n", "unknown keys ['task']"),
    ("policies: []\ntasks: {t: {family: pnp}}\n", "policies"),
])
def test_spec_errors_name_the_file_and_key_before_anything_runs(tmp_path, text, needle):
    spec = _spec(tmp_path, text)
    result = CliRunner().invoke(app, ["eval-batch", str(spec), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert needle in result.output and "batch.yaml" in result.output, result.output
    assert not (tmp_path / "out").exists()


def test_score_only_needs_a_batch_run_and_a_changed_spec_is_refused(batch, tmp_path):
    with pytest.raises(PolicyError, match="--score-only"):
        run_batch(load_batch(batch), tmp_path / "none", score_only=True)
    out = tmp_path / "b"
    run_batch(load_batch(batch), out, limit=1)
    batch.write_text(batch.read_text().replace("max_ticks: 900", "max_ticks: 800"))
    with pytest.raises(PolicyError, match="not empty"):
        run_batch(load_batch(batch), out)
    assert json.loads((out / "summary.json").read_text())["spec"] == "batch.yaml"
