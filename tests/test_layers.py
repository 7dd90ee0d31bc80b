"""The package layers, the pure raw format and the light bake path, as declared in pyproject.toml, hold."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def test_import_linter_contracts_are_kept():
    """lint-imports on this checkout's sources: no package imports one above its layer, and
    neither raw nor convert reaches MuJoCo or the planner (see [tool.importlinter])."""
    done = _run("import sys; from importlinter.cli import lint_imports; "
                "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))")
    assert "No module named 'importlinter'" not in done.stderr, "install the dev extra: pip install -e '.[dev]'"
    assert done.returncode == 0, done.stdout + done.stderr
    import re
    import tomllib

    declared = len(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"])
    counts = re.search(r"(\d+) kept, (\d+) broken", done.stdout)
    assert counts and counts.groups() == (str(declared), "0"), done.stdout  # every declared contract ran and held


def test_importing_convert_loads_no_simulator_and_no_planner():
    done = _run("import demoforge.convert, sys; "
                "loaded = [m for m in ('mujoco', 'pymimir', 'demoforge.sim', 'demoforge.execute') if m in sys.modules]; "
                "assert not loaded, loaded")
    assert done.returncode == 0, done.stderr


def test_importing_raw_loads_no_simulator_and_no_planner():
    """Every module of the raw format, imported: nothing that builds or steps a scene comes with it."""
    done = _run("import importlib, pkgutil, sys, demoforge.raw as raw; "
                "[importlib.import_module(f'demoforge.raw.{m.name}') for m in pkgutil.iter_modules(raw.__path__)]; "
                "loaded = [m for m in sys.modules if m in ('mujoco', 'pymimir') or m.startswith(("
                "'demoforge.sim', 'demoforge.scenes', 'demoforge.randomize', 'demoforge.symbolic', "
                "'demoforge.replay'))]; "
                "assert not loaded, loaded")
    assert done.returncode == 0, done.stderr
