"""Faults in the middle of a run: SIGKILL of `generate`, `bake`, `dataset merge` and `render`,
then the same command again (with the inputs spelled differently): it must resume or start
over cleanly and end byte-identical to a run that was never interrupted, with no temporary
folder left behind. Also: a run's bytes do not depend on how its paths are spelled."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app

ROOT = Path(__file__).resolve().parents[2]


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}


def kill_when(argv: list[str], ready, *, cwd: Path, timeout_s: float = 300.0) -> bool:
    """Run `demoforge argv` and SIGKILL it as soon as `ready()` is true; True if it was killed
    mid-run (False: it finished first)."""
    proc = subprocess.Popen([sys.executable, "-m", "demoforge.cli.main", *argv], cwd=cwd, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout_s
    try:
        while proc.poll() is None:
            if ready():
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                return True
            assert time.monotonic() < deadline, f"demoforge {argv} ran past {timeout_s} s"
            time.sleep(0.005)
        return False
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def invoke(argv: list[str]):
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output
    return res


def no_temporaries(*roots: Path) -> None:
    marks = (".partial", ".merge-partial", ".bake-partial", "-shards", ".demoforge-staging", ".shards",
             ".merging")
    left = [p for root in roots for p in root.rglob(".*") if any(m in p.name for m in marks)]
    assert not left, left


def test_generate_bytes_do_not_depend_on_path_spelling(world, tmp_path, monkeypatch):
    """Relative and absolute spellings of the same inputs give byte-identical datasets, and a
    run started with one spelling resumes (here: finds finished) under the other."""
    monkeypatch.chdir(world["tasks"].parent)
    rel = os.path.relpath(world["problem"])
    invoke(["generate", rel, "--episodes-per-problem", "1", "--out", os.path.relpath(tmp_path / "a")])
    invoke(["generate", str(world["problem"]), "--episodes-per-problem", "1", "--out", str(tmp_path / "b")])
    assert files(tmp_path / "a") == files(tmp_path / "b")
    again = invoke(["generate", str(world["problem"]), "--episodes-per-problem", "1", "--out", str(tmp_path / "a")])
    assert "1/1 episodes succeeded" in again.output
    no_temporaries(tmp_path)


@pytest.mark.slow
def test_generate_killed_resumes_byte_identically_under_another_spelling(world, tmp_path):
    args = ["--episodes-per-problem", "3", "--seed", "2"]
    invoke(["generate", str(world["problem"]), *args, "--out", str(tmp_path / "ref")])
    out = tmp_path / "run"
    staged = out / ".shards"
    killed = kill_when(["generate", os.path.relpath(world["problem"], tmp_path), *args, "--out", "run"],
                       lambda: any(staged.glob("*/success/.demoforge-staging/episodes/000000.json")), cwd=tmp_path)
    assert killed, "generate finished before it could be killed"
    invoke(["generate", str(world["problem"]), *args, "--out", str(out)])  # the absolute spelling resumes it
    assert files(out) == files(tmp_path / "ref")
    no_temporaries(tmp_path)


@pytest.mark.slow
def test_bake_killed_then_rerun_is_byte_identical_and_clean(world, tmp_path):
    invoke(["bake", str(world["rendered"]), "--out", str(tmp_path / "ref"), "--control-space", "joint_pos"])
    shards = tmp_path / ".baked.bake-shards"
    killed = kill_when(["bake", str(world["rendered"]), "--out", "baked", "--control-space", "joint_pos"],
                       lambda: shards.is_dir(), cwd=tmp_path)
    assert killed, "bake finished before it could be killed"
    invoke(["bake", str(world["rendered"]), "--out", str(tmp_path / "baked"), "--control-space", "joint_pos"])
    assert files(tmp_path / "baked") == files(tmp_path / "ref")
    no_temporaries(tmp_path)


@pytest.mark.slow
def test_merge_killed_then_rerun_is_byte_identical_and_clean(world, tmp_path):
    sources = [str(world["rendered"])] * 3
    invoke(["dataset", "merge", *sources, "--out", str(tmp_path / "ref")])
    partial = tmp_path / ".merged.merge-shards" / ".merged.merge-partial"  # the merge runs in the stage's work folder
    killed = kill_when(["dataset", "merge", *sources, "--out", "merged"],
                       lambda: (partial / ".demoforge-staging").is_dir(), cwd=tmp_path)
    assert killed, "merge finished before it could be killed"
    invoke(["dataset", "merge", *sources, "--out", str(tmp_path / "merged")])
    assert files(tmp_path / "merged") == files(tmp_path / "ref")
    no_temporaries(tmp_path)


@pytest.mark.slow
def test_render_killed_resumes_byte_identically_and_a_rerun_is_a_no_op(world, tmp_path):
    argv = ["render", str(world["raw"]), "--look", "plain", "--cameras", "front,wrist", "--out"]
    invoke([*argv, str(tmp_path / "ref")])
    out = tmp_path / "out"
    shards = tmp_path / ".out.render-shards" / ".shards"
    killed = kill_when([*argv, "out"], lambda: any(shards.glob("*/data/.demoforge-staging/episodes/*.json")),
                       cwd=tmp_path)
    assert killed, "render finished before it could be killed"
    invoke([*argv, str(out)])
    assert files(out) == files(tmp_path / "ref")
    invoke([*argv, str(out)])  # finished: the same command again succeeds and changes nothing
    assert files(out) == files(tmp_path / "ref")
    no_temporaries(tmp_path)


def test_failed_merge_leaves_nothing_and_reruns(world, tmp_path, monkeypatch):
    """A merge that fails half-way (here: the disk fills) leaves no output and no staging; the
    same command then succeeds."""
    import errno

    from demoforge.dataset import merge as merge_mod

    real = merge_mod.DatasetMerger.add
    calls = {"n": 0}

    def failing(self, source):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(self.out / "data"))
        return real(self, source)

    monkeypatch.setattr(merge_mod.DatasetMerger, "add", failing)
    argv = ["dataset", "merge", str(world["raw"]), str(world["raw"]), "--out", str(tmp_path / "m")]
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 2 and "No space left on device" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "m").exists()
    no_temporaries(tmp_path)
    monkeypatch.setattr(merge_mod.DatasetMerger, "add", real)
    invoke(argv)
    no_temporaries(tmp_path)


def test_stale_temporaries_of_killed_runs_are_removed(world, tmp_path):
    """What a SIGKILL leaves (an unlocked temporary folder beside the output) is removed by the
    next run of the same command."""
    for name in (".b.bake-shards", ".m.merge-shards/.m.merge-partial/.demoforge-staging", ".e.partial"):
        (tmp_path / name).mkdir(parents=True)
        (tmp_path / name / "junk").write_text("left by a killed run")
    invoke(["bake", str(world["rendered"]), "--out", str(tmp_path / "b"), "--control-space", "joint_pos"])
    invoke(["dataset", "merge", str(world["raw"]), "--out", str(tmp_path / "m")])
    invoke(["scenes", "build", str(world["problem"]), "--reset-states", "1", "--seed", "0", "--out",
            str(tmp_path / "e")])
    killed_rollout = tmp_path / "r" / "dataset" / ".demoforge-staging"  # what a killed rollout leaves
    killed_rollout.mkdir(parents=True)
    (killed_rollout / "config.json").write_text("{}")
    invoke(["rollout", "--policy", "expert", "--problems", str(world["problem"]), "--out", str(tmp_path / "r"),
            "--max-ticks", "5"])
    assert (tmp_path / "r" / "summary.json").is_file()
    no_temporaries(tmp_path)
