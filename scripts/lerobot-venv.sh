#!/usr/bin/env bash
# Builds (once) and prints the python of a cached venv holding the real lerobot 0.6.1.
# lerobot >= 0.5 needs Python >= 3.12; the venv lives outside the repo and is reused.
set -euo pipefail
version="0.6.1"
cache="${DEMOFORGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/demoforge}"
venv="$cache/lerobot-$version"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import lerobot.datasets.lerobot_dataset" 2>/dev/null; then
  echo "$venv/bin/python"; exit 0
fi
py=$(command -v python3.12 || true)
if [ -z "$py" ] && command -v pyenv >/dev/null; then
  py=$(ls -d "$(pyenv root)"/versions/3.12*/bin/python3.12 2>/dev/null | tail -n 1)
fi
[ -n "$py" ] || { echo "lerobot-venv: no Python 3.12 found (lerobot >= 0.5 needs it); install python3.12" >&2; exit 1; }
mkdir -p "$cache"
echo "lerobot-venv: building $venv with $py (one-off, a few minutes)" >&2
rm -rf "$venv.tmp"
"$py" -m venv "$venv.tmp"
"$venv.tmp/bin/pip" install -q --upgrade pip >&2
"$venv.tmp/bin/pip" install -q "lerobot[dataset]==$version" >&2
rm -rf "$venv"; mv "$venv.tmp" "$venv"
echo "$venv/bin/python"
