"""scripts/lerobot-v21-venv.sh (the LeRobot v2.1 reader for the export conformance tests) builds its
cached Python 3.11 venv where it stays, marks it complete last and reuses it. A fake interpreter
stands in for Python 3.11 (no network)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_setup_scripts import FAKE_PYTHON, _env, _exe, _run


def test_lerobot_v21_venv_is_built_once_where_it_stays(tmp_path):
    bin_ = tmp_path / "bin"
    _exe(bin_ / "python3.11", FAKE_PYTHON.format(version="3.11"))
    env = {**_env(tmp_path, [bin_]), "DEMOFORGE_CACHE": str(tmp_path / "cache")}
    res = _run("lerobot-v21-venv.sh", env=env)
    assert res.returncode == 0, res
    python = Path(res.stdout.strip())
    assert python.is_file() and python.parent.parent == tmp_path / "cache" / "lerobot-0.3.3-datasets-3.6.0"
    assert (python.parent.parent / ".demoforge-complete").is_file() and "building" in res.stderr
    again = _run("lerobot-v21-venv.sh", env=env)
    assert again.returncode == 0 and again.stdout == res.stdout and "building" not in again.stderr

