"""StepProgress: plain lines with a rate and an ETA off a terminal, throttled, the last always; nothing when quiet."""

from demoforge.cli import progress as mod
from demoforge.cli.progress import StepProgress


def test_plain_lines_are_throttled_and_the_last_is_always_printed(capsys, monkeypatch):
    clock = iter([0.0, 1.0, 2.0, 8.0])  # start, then one reading per update
    monkeypatch.setattr(mod.time, "perf_counter", lambda: next(clock))
    with StepProgress("render", "episodes", tty=False) as p:
        p.update(1, 4)  # first: printed
        p.update(2, 4)  # 1 s later: within PLAIN_EVERY_S, skipped
        p.update(3, 4)  # 7 s after the first line: printed
    err = capsys.readouterr().err.splitlines()
    assert err == ["render: 1/4 episodes, 1.00 episodes/s, eta 3 s", "render: 3/4 episodes, 0.38 episodes/s, eta 3 s"]
    monkeypatch.setattr(mod.time, "perf_counter", lambda: 10.0)
    p.update(4, 4)  # the last step is printed whenever it comes
    assert capsys.readouterr().err == "render: 4/4 episodes, 0.40 episodes/s, took 10 s\n"


def test_quiet_prints_nothing(capsys):
    with StepProgress("bake", "episodes", quiet=True, tty=False) as p:
        for k in range(1, 4):
            p.update(k, 3)
    assert capsys.readouterr().err == ""
