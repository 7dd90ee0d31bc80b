"""StepProgress: plain lines with a rate and an ETA off a terminal, throttled, the last always; nothing when quiet."""

from demoforge.cli import progress as mod
from demoforge.cli.progress import StepProgress
from demoforge.stage import ProgressEvent


def ep(done, total, **kw):
    return ProgressEvent("render", "episode", f"episode {done - 1}", done, total, **kw)


def test_plain_lines_are_throttled_and_the_last_is_always_printed(capsys, monkeypatch):
    clock = iter([0.0, 1.0, 2.0, 8.0])  # start, then one reading per update
    monkeypatch.setattr(mod.time, "perf_counter", lambda: next(clock))
    with StepProgress("render", "episodes", tty=False) as p:
        p(ep(1, 4))  # first: printed
        p(ep(2, 4))  # 1 s later: within PLAIN_EVERY_S, skipped
        p(ep(3, 4))  # 7 s after the first line: printed
    err = capsys.readouterr().err.splitlines()
    assert err == ["render: 1/4 episodes, 1.00 episodes/s, eta 3 s", "render: 3/4 episodes, 0.38 episodes/s, eta 3 s"]
    monkeypatch.setattr(mod.time, "perf_counter", lambda: 10.0)
    p(ep(4, 4))  # the last step is printed whenever it comes
    assert capsys.readouterr().err == "render: 4/4 episodes, 0.40 episodes/s, took 10 s\n"


def test_quiet_prints_nothing(capsys):
    with StepProgress("bake", "episodes", quiet=True, tty=False, outcomes=True) as p:
        for k in range(1, 4):
            p(ep(k, 3, success=True))
    assert capsys.readouterr() == ("", "")


def test_item_events_and_unknown_totals_show_no_count(capsys):
    with StepProgress("merge", tty=False) as p:
        p(ProgressEvent("merge", "item", "source-0"))
        p(ProgressEvent("merge", "episode", "source-0", 1, None))
    assert capsys.readouterr() == ("", "")


def test_outcomes_print_a_line_per_episode_on_stdout(capsys):
    with StepProgress("rollout", tty=False, outcomes=True) as p:
        p(ProgressEvent("rollout", "episode", "pnp-0", 1, 2, success=True))
        p(ProgressEvent("rollout", "episode", "pnp-1", None, None, success=False, failure="truncated"))
    out, err = capsys.readouterr()
    assert out.splitlines() == ["[1/2] pnp-0: success", "[2] pnp-1: truncated"]  # no done: counted here
    assert err.startswith("rollout: 1/2 episodes")


def test_outcomes_add_the_success_rate_and_a_stage_counts_afresh(capsys, monkeypatch):
    """generate and run show the success rate so far; `stage(name)` (run's next stage) restarts the
    count under the new name."""
    monkeypatch.setattr(mod.time, "perf_counter", lambda: 0.0)
    with StepProgress("execute", "episodes", tty=False) as p:
        p(ep(1, 2, success=True))
        p(ep(2, 2, success=False, failure="collision"))
        p.stage("render")
        p(ep(1, 1))
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("execute: 1/2 episodes, success 100.0%, ")
    assert err[1].startswith("execute: 2/2 episodes, success 50.0%, ")
    assert err[2].startswith("render: 1/1 episodes, ") and "success" not in err[2]
