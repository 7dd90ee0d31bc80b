"""rollout, eval and relabel write through `run_stage`, which guards their OUT (a run folder:
OUT/dataset beside the summary): never into or over an input, never a file, never a foreign
folder, refused before the policy is loaded and before anything is written; a finished run is
returned without loading the policy, its lost summary written again to the same bytes."""

import re

import pytest

from demoforge.dataset.guard import resolved
from demoforge.policy import PolicyError, RolloutSettings, rollout
from demoforge.policy.evaluate import evaluate_from_dataset
from demoforge.policy.relabel import relabel
from demoforge.policy.stage import PolicyLoad
from demoforge.stage import runner
from tests.adversarial.test_kills import files, no_temporaries

HOLD = "tests.policy.scripted:hold"
SETTINGS = RolloutSettings(max_ticks=20)


@pytest.fixture
def guarded(monkeypatch):
    """The (OUT, inputs) `run_stage` guarded, in order; and no policy may be loaded."""
    seen = []
    guard = runner.guard_output_dir

    def spy(out, inputs=(), **kw):
        seen.append((out, [str(i) for i in inputs]))
        return guard(out, inputs, **kw)

    def no_load(self):
        raise AssertionError(f"policy {self.spec} loaded")

    monkeypatch.setattr(runner, "guard_output_dir", spy)
    monkeypatch.setattr(PolicyLoad, "load", no_load)
    return seen


def _commands(pnp, expert_data):
    """Each policy command as a function of its OUT, and the input an OUT may not touch."""
    return {
        "rollout": (lambda out: rollout(HOLD, [pnp], out, episodes=1, settings=SETTINGS), pnp),
        "eval": (lambda out: evaluate_from_dataset(HOLD, expert_data, out, settings=SETTINGS), expert_data),
        "relabel": (lambda out: relabel(expert_data, out), expert_data),
    }


@pytest.mark.parametrize("command", ["rollout", "eval", "relabel"])
def test_an_out_over_or_in_an_input_a_file_or_a_foreign_folder_is_refused_by_run_stage(
        command, pnp, expert_data, tmp_path, guarded):
    run, source = _commands(pnp, expert_data)[command]
    (tmp_path / "f").write_text("a file")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("precious")
    before, sources = files(tmp_path), files(source.parent)
    cases = [(source / "out", f"--out {source / 'out'}: lies inside the input {source}; "),
             (tmp_path / "f", f"--out {tmp_path / 'f'}: is a file, not a folder; choose a folder path"),
             (tmp_path / "full", f"--out {tmp_path / 'full'}: exists and is not empty")]
    if source.is_dir():
        cases.append((source, f"--out {source}: is the input {source}; "))
    for out, message in cases:
        with pytest.raises(PolicyError, match=re.escape(message)):
            run(out)
        assert guarded[-1][0] == out and resolved(source) in map(resolved, guarded[-1][1])
    assert files(tmp_path) == before and files(source.parent) == sources  # nothing written, no policy loaded


def test_a_finished_rollout_is_returned_without_loading_the_policy(pnp, tmp_path, monkeypatch):
    out = tmp_path / "r"
    summary = rollout(HOLD, [pnp], out, episodes=2, settings=SETTINGS)
    whole = files(out)
    monkeypatch.setattr(PolicyLoad, "load", lambda self: pytest.fail("the policy was loaded"))
    assert rollout(HOLD, [pnp], out, episodes=2, settings=SETTINGS) == summary
    for lost in (["summary.json"], ["summary.json", "SUMMARY.md"]):  # a kill after the dataset, before the summary
        for name in lost:
            (out / name).unlink()
        assert rollout(HOLD, [pnp], out, episodes=2, settings=SETTINGS) == summary
        assert files(out) == whole
    with pytest.raises(PolicyError, match="exists and is not empty"):
        rollout(HOLD, [pnp], out, episodes=3, settings=SETTINGS)  # other settings: another run
    no_temporaries(tmp_path)


def test_a_bad_policy_is_named_before_any_work_and_leaves_no_folder(pnp, tmp_path):
    with pytest.raises(PolicyError, match="nowhere"):
        rollout("tests.policy.scripted:nowhere", [pnp], tmp_path / "r", episodes=1, settings=SETTINGS)
    assert list(tmp_path.iterdir()) == []


def test_relabel_with_nothing_failed_runs_through_run_stage(expert_data, tmp_path, guarded):
    summary = relabel(expert_data, tmp_path / "l")
    assert guarded == [(tmp_path / "l", [str(expert_data)])]
    assert summary["failed"] == [] and files(tmp_path / "l").keys() == {"summary.json"}
    with pytest.raises(PolicyError, match="exists and is not empty"):
        relabel(expert_data, tmp_path / "l")  # a finished relabel is not rerun over
    no_temporaries(tmp_path)
