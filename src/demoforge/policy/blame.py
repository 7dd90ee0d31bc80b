"""Whose exception is it: a user's policy that fails is bad input (exit 2), not a demoforge bug.

    try:
        actions = policy.act(obs)
    except Exception as exc:
        raise user_error(spec, "act()", exc, roots=code_roots(policy)) or exc

An exception is the user's when its traceback runs through their code: a file outside
demoforge, the standard library and installed packages, or under the folder of the module
the policy came from (`roots`, so a policy installed as a package counts too); or when it
came from importing their module or calling their factory (`always`). The message names the
spec, what was running, the exception and the file and line of the user's code.
"""

from __future__ import annotations

import sys
import sysconfig
import traceback
from pathlib import Path

from demoforge.policy.protocol import PolicyError

_DEMOFORGE = Path(__file__).resolve().parents[1]  # the demoforge package folder
_LIBRARIES = tuple({Path(sysconfig.get_paths()[k]).resolve() for k in ("stdlib", "platstdlib", "purelib", "platlib")})


def _under(path: Path, roots) -> bool:
    return any(path == r or r in path.parents for r in roots)


def _is_user(filename: str, roots: tuple[Path, ...]) -> bool:
    if filename.startswith("<"):  # <frozen importlib._bootstrap>, <string>
        return False
    path = Path(filename).resolve()
    if _under(path, roots):
        return True
    return not _under(path, (_DEMOFORGE,)) and not _under(path, _LIBRARIES)


def code_roots(obj) -> tuple[Path, ...]:
    """The folder of the module that defines `obj`'s class (a user's policy), unless that is demoforge's."""
    module = sys.modules.get(type(obj).__module__)
    file = getattr(module, "__file__", None)
    if not file:
        return ()
    folder = Path(file).resolve().parent
    return () if _under(folder, (_DEMOFORGE,)) else (folder,)


def user_line(exc: BaseException, roots: tuple[Path, ...] = ()) -> str | None:
    """'FILE:LINE' of the deepest user frame of `exc`'s traceback (a SyntaxError's own line
    first), or None when no user code ran."""
    if isinstance(exc, SyntaxError) and exc.filename and _is_user(exc.filename, roots):
        return f"{exc.filename}:{exc.lineno}"
    # walk_tb, not extract_tb: the latter honours sys.tracebacklimit, which a library may have left at 0
    frames = [(f.f_code.co_filename, line) for f, line in traceback.walk_tb(exc.__traceback__)
              if _is_user(f.f_code.co_filename, roots)]
    return f"{frames[-1][0]}:{frames[-1][1]}" if frames else None


def user_error(spec: str, doing: str, exc: BaseException, *, roots: tuple[Path, ...] = (),
               always: bool = False) -> PolicyError | None:
    """A PolicyError naming `spec`, what it was `doing`, `exc` and the user's line; None when the
    traceback holds no user frame (a demoforge bug: let it through) unless `always`."""
    where = user_line(exc, roots)
    if where is None and not always:
        return None
    what = f"SystemExit({exc.code!r}) (it called sys.exit)" if isinstance(exc, SystemExit) \
        else f"{type(exc).__name__}: {exc}"
    return PolicyError(f"policy {spec!r}: {doing} raised {what}" + (f" at {where}" if where else "")
                       + "; fix the policy's code")


__all__ = ["code_roots", "user_error", "user_line"]
