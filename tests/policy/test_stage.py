"""rollout and eval as stages: the bytes do not depend on --workers, a SIGKILLed run resumes to
the bytes of one never interrupted, a finished run rerun is returned as it is."""

import json

import pytest

from demoforge.policy import PolicyError, RolloutSettings, load_policy, rollout
from demoforge.policy.evaluate import evaluate_from_dataset
from demoforge.stage import ProgressEvent
from tests.adversarial.test_kills import ROOT, files, kill_when, no_temporaries

HOLD = "tests.policy.scripted:hold"
SETTINGS = RolloutSettings(max_ticks=30)


def test_rollout_bytes_do_not_depend_on_the_worker_count(pnp, tmp_path):
    events = []
    one = rollout(HOLD, [pnp], tmp_path / "one", episodes=8, envs=2, settings=SETTINGS, workers=1,
                  progress=events.append)
    two = rollout(HOLD, [pnp], tmp_path / "two", episodes=8, envs=2, settings=SETTINGS, workers=2)
    assert one == two and one["overall"]["episodes"] == 8
    assert files(tmp_path / "one") == files(tmp_path / "two")
    assert [e.kind for e in events].count("episode") == 8 and all(isinstance(e, ProgressEvent) for e in events)
    assert [e.done for e in events if e.kind == "episode"] == list(range(1, 9))
    again = rollout(HOLD, [pnp], tmp_path / "one", episodes=8, envs=2, settings=SETTINGS, workers=2)
    assert again == one  # finished with the same inputs: nothing to do
    no_temporaries(tmp_path)


def test_eval_bytes_do_not_depend_on_the_worker_count(expert_data, tmp_path):
    from demoforge.policy.starts import parse_starts

    runs = [evaluate_from_dataset("expert", expert_data, tmp_path / str(w), workers=w, starts=parse_starts("every:30"),
                                  settings=RolloutSettings(max_ticks=900)) for w in (1, 2)]
    assert runs[0] == runs[1] and runs[0]["by_start"]["every:30"]["episodes"] >= 8
    assert runs[0]["overall"]["success_rate"] == 1.0
    assert files(tmp_path / "1") == files(tmp_path / "2")


def test_a_killed_rollout_resumes_to_the_same_bytes(pnp, tmp_path):
    argv = ["rollout", "--policy", HOLD, "--problems", str(pnp), "--episodes", "16", "--envs", "2", "--max-ticks",
            "60", "--out", str(tmp_path / "killed")]
    shards = tmp_path / "killed" / ".dataset.rollout-shards" / ".shards"
    killed = kill_when(argv, lambda: any(shards.glob("*/done.json")) if shards.is_dir() else False, cwd=ROOT)
    assert killed, "the run finished before it could be killed"
    assert not (tmp_path / "killed" / "summary.json").exists()
    kept = [p.parent.name for p in shards.glob("*/done.json")]
    assert kept  # the finished item is resumed, not redone
    kill_when(argv, lambda: False, cwd=ROOT)  # the same command: resumes
    kill_when(argv[:-1] + [str(tmp_path / "whole")], lambda: False, cwd=ROOT)
    assert files(tmp_path / "killed") == files(tmp_path / "whole")
    assert json.loads((tmp_path / "whole" / "summary.json").read_text())["overall"]["episodes"] == 16
    no_temporaries(tmp_path)


def test_several_workers_need_the_policy_as_a_spec(pnp, tmp_path):
    with pytest.raises(PolicyError, match="as a spec"):
        rollout(load_policy(HOLD), [pnp], tmp_path / "o", episodes=8, settings=SETTINGS, workers=2)
    assert not (tmp_path / "o").exists()


def test_relabel_bytes_do_not_depend_on_the_worker_count(pnp, tmp_path):
    from demoforge.policy.relabel import relabel

    rollout(HOLD, [pnp], tmp_path / "r", episodes=4, envs=2, settings=RolloutSettings(max_ticks=20))
    runs = [relabel(tmp_path / "r" / "dataset", tmp_path / f"l{w}", envs=2, workers=w) for w in (1, 2)]
    assert runs[0]["failed"] == [0, 1, 2, 3] and runs[0]["relabeled"] == 4
    assert files(tmp_path / "l1") == files(tmp_path / "l2")
    no_temporaries(tmp_path)
