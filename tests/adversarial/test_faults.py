"""A full disk across the writing commands: an atomic commit (a temporary file or folder
renamed into place, `os.replace`), the first or the last, fails with ENOSPC. Each command must exit 2 naming the fault and the fix, print no traceback, change
no input, leave no half-written output, and the same command rerun on a freed disk must
succeed and leave no temporary file or folder behind."""

from __future__ import annotations

import errno
import os

import pytest
from typer.testing import CliRunner

from demoforge.cli.main import app
from tests.adversarial.conftest import tree_hash
from tests.adversarial.test_catalogue import TEMP_MARKS, _names

# id, argv (formatted as in the catalogue), the output that must not be left half-written, and
# the rerun's exit code where it is not 0 (the shared raw dataset is cut short: replay finds it
# diverging, exit 1)
FULL_DISK = [
    ("generate", ["generate", "{problem}", "--episodes-per-problem", "1", "--out", "{out}"], "{out}/summary.json"),
    ("bake", ["bake", "{rendered}", "--out", "{out}"], "{out}"),
    ("export-openpi", ["export", "openpi", "{baked}", "--out", "{out}", "--action-horizon", "4"], "{out}"),
    ("export-gr00t", ["export", "gr00t", "{baked}", "--out", "{out}", "--action-horizon", "4"], "{out}"),
    ("render", ["render", "{raw}", "--look", "plain", "--cameras", "front", "--out", "{out}"],
     "{out}/meta/demoforge/render.json"),
    ("merge", ["dataset", "merge", "{raw}", "{raw}", "--out", "{out}"], "{out}"),
    ("scenes-build", ["scenes", "build", "{problem}", "--reset-states", "1", "--seed", "0", "--out", "{out}"], "{out}"),
    ("tasks-gen", ["tasks", "gen", "pnp", "--problems", "2", "--task-seed", "0", "--out", "{out}"], "{out}"),
    ("doctor-json", ["doctor", "{raw}", "--json", "{tmp}/d.json"], "{tmp}/d.json"),
    ("doctor-report", ["doctor", "{raw}", "--report", "{tmp}/d.md"], "{tmp}/d.md"),
    ("replay-json", ["replay", "{raw}", "--json", "{tmp}/r.json"], "{tmp}/r.json", 1),
    ("plot", ["plot", "{raw}", "--episode", "0", "--out", "{tmp}/p.png"], "{tmp}/p.png"),
    ("look-sheet", ["look-sheet", "--look", "plain", "--draws", "1", "--cameras", "front", "--out", "{tmp}/s.png"],
     "{tmp}/s.png"),
    ("viz", ["viz", "{rendered}", "--out", "{out}", "--episodes", "0", "--kinds", "rgb"], "{out}/episode_000000.mp4"),
    ("rollout", ["rollout", "--policy", "expert", "--problems", "{problem}", "--out", "{out}", "--max-ticks", "5"],
     "{out}/summary.json"),
    ("eval", ["eval", "--policy", "expert", "--from-dataset", "{raw}", "--episodes", "0", "--out", "{out}",
              "--max-ticks", "5"], "{out}/summary.json"),
]


@pytest.mark.parametrize("when", ["first", "last"])
@pytest.mark.parametrize("argv, product, rerun_code", [pytest.param(a, p, *(rest or [0]), id=i)
                                                     for i, a, p, *rest in FULL_DISK])
def test_full_disk_exits_2_leaves_nothing_half_written_and_reruns(world, world_hashes, tmp_path, monkeypatch,
                                                                  argv, product, rerun_code, when):
    """`when`: the disk fills at the command's first commit, or at its last (counted on a run
    elsewhere that succeeds), when all the work is done but the result is not yet in place."""
    real = os.replace
    fail_at = 1
    if when == "last":
        scratch = tmp_path / "scratch"
        scratch.mkdir()
        count = []
        monkeypatch.setattr(os, "replace", lambda src, dst, *a, **k: (count.append(dst), real(src, dst, *a, **k)))
        ok = CliRunner().invoke(app, [a.format(**_names(world, scratch)) for a in argv])
        monkeypatch.setattr(os, "replace", real)
        assert ok.exit_code == rerun_code, ok.output
        fail_at = len(count)
    tmp = tmp_path / "case"
    tmp.mkdir()
    names = _names(world, tmp)
    args = [a.format(**names) for a in argv]
    calls = []

    def full(src, dst, *rest, **kwargs):
        calls.append(dst)
        if len(calls) == fail_at:
            raise OSError(errno.ENOSPC, "No space left on device", str(dst))
        return real(src, dst, *rest, **kwargs)

    monkeypatch.setattr(os, "replace", full)
    res = CliRunner().invoke(app, args)
    monkeypatch.setattr(os, "replace", real)
    out = res.output
    assert len(calls) >= fail_at, f"demoforge {' '.join(args)} committed nothing through os.replace:\n{out}"
    assert res.exit_code == 2, f"exit {res.exit_code}: demoforge {' '.join(args)}\n{out}"
    assert "Traceback" not in out and "internal error" not in out, out
    assert "No space left on device" in out and "free space" in out, out
    assert tree_hash(world["base"]) == world_hashes, "a shared input changed"
    done = product.format(**names)
    assert not os.path.exists(done), f"{done} exists after the disk filled"
    resumable = (".demoforge-staging", ".shards")  # what the rerun resumes from
    half = [p for p in tmp.rglob("*") if p.name.endswith((".tmp", ".partial", ".part"))
            and not any(part in resumable for part in p.relative_to(tmp).parts)]
    assert not half, f"half-written files left: {half}"

    again = CliRunner().invoke(app, args)  # the disk has room again: the same command succeeds
    assert again.exit_code == rerun_code, again.output
    assert os.path.exists(done)
    left = [p for p in (*tmp.rglob(".*"), *world["base"].rglob(".*")) if any(m in p.name for m in TEMP_MARKS)]
    assert not left, f"temporaries left after the rerun: {left}"
