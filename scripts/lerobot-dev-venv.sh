#!/usr/bin/env bash
# Builds VENV (default .venv-lerobot): Python 3.12 with demoforge (editable, dev extra), the
# lerobot env plugin (editable) and the real lerobot 0.6.1 with its training extra.
# lerobot and torch (~5 GB) are not installed again: a .pth file adds the site-packages of the
# cached venv that scripts/lerobot-venv.sh builds once per machine. Run lerobot's scripts as
#   VENV/bin/lerobot-train ...   (and lerobot-eval; or VENV/bin/python -m lerobot.scripts.lerobot_train)
# so they run with demoforge and the plugin importable: the cached venv's lerobot-* console
# scripts are written again into VENV/bin with VENV's python. `pip check` must pass.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-.venv-lerobot}"
extras="${DEMOFORGE_LEROBOT_EXTRAS:-dev,fd,coacd,arms,report,onnx}"  # demoforge extras the 3.12 test run needs
base=$(bash scripts/lerobot-venv.sh)
py=$(bash scripts/find-python.sh 3.12) || {
  echo "lerobot-dev-venv: no working Python 3.12 found; install python3.12" >&2; exit 1; }
purelib='import sysconfig; print(sysconfig.get_paths()["purelib"])'
if [ "$("$base" -c 'import sys; print(sys.version_info[:2])')" != "$("$py" -c 'import sys; print(sys.version_info[:2])')" ]; then
  echo "lerobot-dev-venv: $base and $py are different Pythons" >&2; exit 1
fi
rm -rf "$venv"
"$py" -m venv "$venv"
echo "$("$base" -c "$purelib")" > "$("$venv/bin/python" -c "$purelib")/_demoforge_lerobot_base.pth"
"$venv/bin/pip" install -q --disable-pip-version-check -e ".[$extras]" -e plugins/lerobot_env_demoforge
"$venv/bin/pip" check --disable-pip-version-check
here="$(cd "$venv" && pwd)"
for script in "$(dirname "$base")"/lerobot-*; do
  { echo "#!$here/bin/python"; tail -n +2 "$script"; } > "$venv/bin/$(basename "$script")"
  chmod +x "$venv/bin/$(basename "$script")"
done
touch "$venv/.installed"
