#!/usr/bin/env bash
# Builds (once) and prints the python of a cached venv holding the LeRobot v2.1 reader that
# openpi trains with: openpi pins lerobot at git commit 0cf8648 (2025-05-28) with datasets
# 3.6.0. That commit is not on PyPI; lerobot 0.3.3 (2025-08-06) is the last PyPI release that
# reads codebase v2.1, and its read path (LeRobotDatasetMetadata, LeRobotDataset, hf_dataset
# loading, delta_timestamps, video decoding) is the commit's code under the module path
# lerobot.datasets instead of lerobot.common.datasets; the two differ only in the writer.
# The other pins are openpi's uv.lock (what its loader runs with): torch 2.7.1, numpy 1.26.4,
# pyarrow 20.0.0, pandas 2.2.3; huggingface-hub 0.34.2 (openpi locks 0.32.3, below what
# lerobot 0.3.3 requires).
# Python 3.11, as openpi. Built at its final path and marked complete last (a killed build is
# removed and rebuilt by the next call).
set -euo pipefail
version="0.3.3"
cache="${DEMOFORGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/demoforge}"
venv="$cache/lerobot-$version-datasets-3.6.0"
marker="$venv/.demoforge-complete"
check='import datasets, lerobot.datasets.lerobot_dataset as m; assert datasets.__version__ == "3.6.0"; assert m.CODEBASE_VERSION == "v2.1"'
if [ -f "$marker" ] && [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" 2>/dev/null; then
  echo "$venv/bin/python"; exit 0
fi
py=$(bash "$(dirname "$0")/find-python.sh" 3.11) || {
  echo "lerobot-v21-venv: no working Python 3.11 found (openpi's Python); install python3.11" >&2; exit 1; }
mkdir -p "$cache"
exec 9>"$cache/.lerobot-$version-v21.lock"
flock 9
if [ -f "$marker" ]; then echo "$venv/bin/python"; exit 0; fi
echo "lerobot-v21-venv: building $venv with $py (one-off, a few minutes)" >&2
rm -rf "$venv"
"$py" -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip >&2
"$venv/bin/pip" install -q "lerobot==$version" "datasets==3.6.0" "torch==2.7.1" "numpy==1.26.4" "pyarrow==20.0.0" \
  "pandas==2.2.3" "huggingface-hub==0.34.2" >&2
"$venv/bin/python" -c "$check"
touch "$marker"
echo "$venv/bin/python"
