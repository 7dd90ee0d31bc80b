"""The one place where the `demoforge` command turns exceptions into messages and exit codes.

Exit codes: 0 done, 1 findings (a check or the doctor found problems), 2 bad input or an
environment fault (a full disk, a permission, a file that is not UTF-8, a damaged parquet,
JSON or video file), 3 an internal error (a bug: please report it). No traceback is printed
unless `demoforge --debug ...` (or DEMOFORGE_DEBUG=1) asks for it.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import click
import typer
from typer.core import TyperGroup

from demoforge.errors import DemoforgeError

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3

_FIXES = {
    errno.ENOSPC: "free space on that disk or choose an output on another one; rerun the same command to resume",
    errno.EDQUOT: "free space within your quota or choose an output elsewhere; rerun the same command to resume",
    errno.EACCES: "check the file's permissions, or choose an output folder you can write",
    errno.EPERM: "check the file's permissions, or choose an output folder you can write",
    errno.EROFS: "the file system is read-only: choose an output on a writable one",
    errno.ENOENT: "check the path",
    errno.ENOTDIR: "a part of the path is a file, not a folder: check the path",
    errno.EISDIR: "the path is a folder: give a file",
    errno.ENAMETOOLONG: "use a shorter name (file names are limited to 255 bytes)",
    errno.EMFILE: "raise the open-file limit (ulimit -n) or use fewer --workers",
}


def message(exc: BaseException) -> str:
    """The one-paragraph message for `exc`: what happened, where, and the fix."""
    if isinstance(exc, DemoforgeError):
        return str(exc)
    if isinstance(exc, UnicodeDecodeError):
        where = _file_being_read(exc)
        return (f"{where or 'a file'}: not UTF-8 text ({exc.reason}: byte {exc.object[exc.start:exc.start + 1]!r} at "
                f"offset {exc.start}); save it as UTF-8")
    if _is_damaged_data(exc):
        where = _file_being_read(exc)
        return (f"{where or 'a file'}: unreadable ({type(exc).__name__}: {exc}); the file is damaged or not what its "
                "name says: restore it from the dataset's source, or rewrite the dataset")
    if isinstance(exc, OSError):
        where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
        what = exc.strerror or str(exc)
        fix = _FIXES.get(exc.errno, "check the path and the disk")
        return f"{where + ': ' if where else ''}{what}; {fix}"
    if isinstance(exc, MemoryError):
        return "out of memory; use smaller options (fewer --envs/--workers/--bins) or a machine with more memory"
    return f"internal error ({type(exc).__name__}: {exc}); rerun with `demoforge --debug ...` for the traceback " \
           "and report it"


def _file_being_read(exc: BaseException) -> Path | None:
    """The file a decoding error came from: the innermost frame of its traceback that holds an
    existing file's Path (Path.read_text's own `self`, or the caller's variable)."""
    tb, frames = exc.__traceback__, []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        values = list(frame.f_locals.values())
        for value in values:
            if isinstance(value, Path) and value.is_file():
                return value
    return None


def _is_damaged_data(exc: BaseException) -> bool:
    """A file's content could not be parsed: JSON, parquet (pyarrow) or video (PyAV/FFmpeg)."""
    module = type(exc).__module__ or ""
    return isinstance(exc, json.JSONDecodeError) or module.startswith(("pyarrow", "av.", "av"))


def exit_code(exc: BaseException) -> int:
    if _is_damaged_data(exc):
        return EXIT_BAD_INPUT
    if isinstance(exc, (DemoforgeError, UnicodeDecodeError, OSError, MemoryError)):
        return EXIT_BAD_INPUT
    return EXIT_INTERNAL


_debug = False  # set by the top-level callback from --debug on every invocation


def set_debug(on: bool) -> None:
    global _debug
    _debug = on


def debug_requested() -> bool:
    return _debug or os.environ.get("DEMOFORGE_DEBUG", "") not in ("", "0")


class DemoforgeGroup(TyperGroup):
    """The top-level command group: every subcommand runs inside `invoke`, so its exceptions
    all pass here once."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (typer.TyperException, typer.Exit, typer.Abort, click.exceptions.Exit, click.exceptions.Abort,
                click.ClickException, SystemExit, KeyboardInterrupt):  # usage errors and exits: typer prints them
            raise
        except Exception as exc:  # noqa: BLE001 - every other exception ends here, once
            if debug_requested():
                raise
            typer.echo(f"error: {message(exc)}", err=True)
            raise typer.Exit(exit_code(exc)) from None


def fail(exc: BaseException) -> BaseException:
    """For a command that catches its own errors: `raise fail(exc) from None` prints `exc` as the
    group does and exits 2, or re-raises `exc` under --debug (its traceback then shows)."""
    if debug_requested():
        return exc
    typer.echo(f"error: {message(exc)}", err=True)
    return typer.Exit(exit_code(exc))
