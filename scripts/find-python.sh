#!/usr/bin/env bash
# Prints the path of a working Python X.Y interpreter, or exits 1.
# A candidate must run: a pyenv shim of an inactive version is found by `command -v` and
# exits 127, so every candidate is tried, not just located.
set -u
want="${1:?usage: find-python.sh X.Y}"
candidates=()
c=$(command -v "python$want" 2>/dev/null) && candidates+=("$c")
if command -v pyenv >/dev/null 2>&1; then
  for p in "$(pyenv root)"/versions/"$want"*/bin/python"$want"; do candidates+=("$p"); done
fi
for p in /usr/bin/python"$want" /usr/local/bin/python"$want"; do candidates+=("$p"); done
for p in "${candidates[@]}"; do
  [ -x "$p" ] || continue
  v=$("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
  [ "$v" = "$want" ] && { echo "$p"; exit 0; }
done
exit 1
