#!/usr/bin/env bash
# Builds (once) and prints the python of a cached venv holding the real lerobot 0.6.1
# (with its training and diffusion extras, for lerobot-train / lerobot-eval in the closed-loop tests
# and bench_train_eval.py's --policy-type diffusion).
# lerobot >= 0.5 needs Python >= 3.12; the venv lives outside the repo and is reused.
# It is built at its final path (console scripts keep working shebangs) and marked complete
# last, so a killed build is removed and rebuilt by the next call.
set -euo pipefail
version="0.6.1"
cache="${DEMOFORGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/demoforge}"
venv="$cache/lerobot-$version-training"
marker="$venv/.demoforge-complete"
extras="dataset,training,diffusion"
ready='import lerobot.datasets.lerobot_dataset, accelerate'
if [ -f "$marker" ] && [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$ready" 2>/dev/null; then
  if ! "$venv/bin/python" -c "import diffusers" 2>/dev/null; then
    # a cache built before the diffusion extra was added gets it in place (venvs built on it keep working)
    exec 9>"$cache/.lerobot-$version.lock"
    flock 9
    "$venv/bin/python" -c "import diffusers" 2>/dev/null \
      || "$venv/bin/pip" install -q --disable-pip-version-check "lerobot[$extras]==$version" >&2
  fi
  echo "$venv/bin/python"; exit 0
fi
py=$(bash "$(dirname "$0")/find-python.sh" 3.12) || {
  echo "lerobot-venv: no working Python 3.12 found (lerobot >= 0.5 needs it); install python3.12" >&2; exit 1; }
mkdir -p "$cache"
exec 9>"$cache/.lerobot-$version.lock"
flock 9
if [ -f "$marker" ]; then echo "$venv/bin/python"; exit 0; fi
echo "lerobot-venv: building $venv with $py (one-off, a few minutes)" >&2
rm -rf "$venv"
"$py" -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip >&2
"$venv/bin/pip" install -q "lerobot[$extras]==$version" >&2
touch "$marker"
echo "$venv/bin/python"
