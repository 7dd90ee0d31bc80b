"""The set-up scripts `make test` runs on a fresh machine: scripts/find-python.sh must pass over
a pyenv shim of an inactive version (found by `command -v`, exits 127) and take a Python that
runs; scripts/lerobot-venv.sh must build its cached venv where it stays, so the console scripts'
shebangs name an interpreter that exists. Fake interpreters stand in for real ones (no network)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"


def _exe(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


# A stand-in Python X.Y: prints its version, "creates" a venv (a copy of itself and a pip that
# writes a console script whose shebang is the venv's python, as pip does), imports anything.
FAKE_PYTHON = """#!/usr/bin/env bash
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin" && cp "$0" "$3/bin/python"
  printf '#!/usr/bin/env bash\\nd=$(cd "$(dirname "$0")" && pwd)\\n[ "$1" = install ] || exit 0\\nprintf "#!%%s/python\\\\n" "$d" > "$d/lerobot-train"\\nchmod +x "$d/lerobot-train"\\n' > "$3/bin/pip"
  chmod +x "$3/bin/pip"; exit 0
fi
if [ "$1" = "-c" ]; then
  case "$2" in *version_info*) echo "{version}";; esac
  exit 0
fi
exit 0
"""


def _run(script: str, *args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPTS / script), *args], env=env, capture_output=True, text=True,
                          timeout=60)


def _env(tmp: Path, path: list[Path]) -> dict:
    return {"PATH": os.pathsep.join([*map(str, path), "/usr/bin", "/bin"]), "HOME": str(tmp / "home")}


def test_find_python_passes_over_a_shim_that_does_not_run(tmp_path):
    shims = tmp_path / "shims"
    _exe(shims / "python3.99", "#!/usr/bin/env bash\necho 'pyenv: python3.99: command not found' >&2\nexit 127\n")
    root = tmp_path / "pyenv"
    good = _exe(root / "versions" / "3.99.1" / "bin" / "python3.99", FAKE_PYTHON.format(version="3.99"))
    _exe(shims / "pyenv", f"#!/usr/bin/env bash\n[ \"$1\" = root ] && echo {root}\n")
    res = _run("find-python.sh", "3.99", env=_env(tmp_path, [shims]))
    assert res.returncode == 0 and res.stdout.strip() == str(good), res

    good.unlink()  # only the shim is left: no working Python, exit 1 (not the shim's path)
    res = _run("find-python.sh", "3.99", env=_env(tmp_path, [shims]))
    assert res.returncode == 1 and res.stdout == "", res


def test_find_python_refuses_a_candidate_of_another_version(tmp_path):
    bin_ = tmp_path / "bin"
    _exe(bin_ / "python3.99", FAKE_PYTHON.format(version="3.98"))  # misnamed: runs, but is 3.98
    assert _run("find-python.sh", "3.99", env=_env(tmp_path, [bin_])).returncode == 1


def test_lerobot_venv_is_built_where_it_stays(tmp_path):
    bin_ = tmp_path / "bin"
    _exe(bin_ / "python3.12", FAKE_PYTHON.format(version="3.12"))
    env = {**_env(tmp_path, [bin_]), "DEMOFORGE_CACHE": str(tmp_path / "cache")}
    res = _run("lerobot-venv.sh", env=env)
    assert res.returncode == 0, res
    python = Path(res.stdout.strip())
    assert python.is_file() and python.is_relative_to(tmp_path / "cache")
    venv = python.parent.parent
    assert (venv / ".demoforge-complete").is_file()
    for script in (venv / "bin").iterdir():
        first = script.read_text().splitlines()[0]
        if first.startswith("#!") and "env bash" not in first:
            assert Path(first[2:].strip()).is_file(), f"{script}: shebang {first} names no interpreter"
    assert [p.name for p in venv.parent.iterdir() if not p.name.startswith(".")] == [venv.name], \
        "a temporary venv was left beside the cached one"
    again = _run("lerobot-venv.sh", env=env)  # cached: the same interpreter, nothing rebuilt
    assert again.returncode == 0 and again.stdout == res.stdout and "building" not in again.stderr


def test_the_cached_lerobot_venv_on_this_machine_has_working_shebangs():
    """The real cached venv, where this machine has one: its console scripts run."""
    cache = Path(os.environ.get("DEMOFORGE_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or
                                                            Path.home() / ".cache") / "demoforge")
    venvs = [v for v in cache.glob("lerobot-*") if (v / ".demoforge-complete").is_file()]
    if not venvs:
        pytest.skip(f"no cached lerobot venv under {cache}")
    for venv in venvs:
        for script in (venv / "bin").glob("lerobot-*"):
            first = script.read_bytes().split(b"\n", 1)[0].decode()
            if first.startswith("#!/"):
                assert Path(first[2:].split()[0]).exists(), f"{script}: shebang {first} names no interpreter"
