"""A clone needs nothing beside it (a user's clone has no `../shared`).

The repository's own files (tracked, or new and not ignored) are copied to a fresh folder with
a poisoned `shared/` beside it, where the suite used to read lerobot-written fixtures from: every
file there is garbage, so a test that still reads it fails. In the copy the whole suite is
collected, and every test module that reads the committed fixtures is run, under an audit hook
that records any file or folder opened outside the copy (`outside_guard.py`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.lerobot_fixtures import FIXTURES, NAMES
from tests.timeouts import SUBPROCESS_S

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def _repo_files() -> list[str]:
    done = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                          capture_output=True, check=True)
    return [f for f in done.stdout.decode().split("\0") if f and (REPO / f).is_file()]


def _copy_repo(dst: Path) -> None:
    for rel in _repo_files():
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / rel, dst / rel)


def _poison(shared: Path) -> None:
    """`shared/fixtures/<name>/...` beside the copy, each file replaced by garbage."""
    for name in NAMES:
        for src in (FIXTURES / name).rglob("*"):
            if src.is_file():
                dst = shared / "fixtures" / name / src.relative_to(FIXTURES / name)
                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.write_bytes(b"outside the repository: no test may read this\n")


def _fixture_modules(root: Path) -> list[str]:
    """Test modules (not conformance ones, which need lerobot's venv) that read the fixtures."""
    return sorted(p.relative_to(root).as_posix() for p in (root / "tests").rglob("test_*.py")
                  if "lerobot_fixtures" in p.read_text(encoding="utf-8") and "conformance" not in p.parts
                  and "self_contained" not in p.parts)


def _pytest(copy: Path, log: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DEMOFORGE_FIXTURES"))}
    env.update(PYTHONPATH=os.pathsep.join([str(copy / "tests" / "self_contained"), str(copy / "src")]),
               DEMOFORGE_GUARD_BOX=str(copy.parent), DEMOFORGE_GUARD_REPO=str(copy), DEMOFORGE_GUARD_LOG=str(log))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "outside_guard",
                           "-n", "0", "--basetemp", str(tmp), *args], cwd=copy, env=env, capture_output=True,
                          text=True, timeout=SUBPROCESS_S)


def test_the_suite_reaches_nothing_outside_a_clone(tmp_path):
    box = tmp_path / "box"
    copy = box / "demoforge"
    _copy_repo(copy)
    _poison(box / "shared")
    log = tmp_path / "outside.log"
    log.touch()

    collected = _pytest(copy, log, tmp_path / "t1", "--collect-only", "tests")
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]

    modules = _fixture_modules(copy)
    assert len(modules) >= 5, modules  # reader, check, merge, bake, doctor
    ran = _pytest(copy, log, tmp_path / "t2", "-rs", "-m", "not conformance", *modules)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert " skipped" not in ran.stdout.splitlines()[-1], ran.stdout[-2000:]
    reached = log.read_text(encoding="utf-8")
    assert not reached, f"the suite reached outside the repository:\n{reached[:3000]}"
