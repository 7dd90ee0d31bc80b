"""The output guard every command that writes goes through: no output is, contains or lies
inside one of the command's inputs, and an existing output is refused unless it is the same
run being resumed.

`run_stage` applies it to every stage's output (the stage names its inputs), so a stage never
calls it; the commands that write outside a stage call it themselves: a report or image file,
a folder of several outputs. It lives in the dataset package, the lowest that writes outputs
(`merge_datasets` refuses a root over its sources), so every package above can use it.

    from demoforge.dataset.guard import guard_output_dir, guard_output_file
    guard_output_dir(out, [source], what="--out")                 # a new folder (or empty)
    guard_output_dir(out, inputs, resumable=is_our_run)           # or the same run, resumed
    guard_output_file(json_out, [dataset], what="--json")         # a report file
    write_file(json_out, text)                                    # written whole or not at all

Paths are compared resolved (symlinks followed, `..` collapsed), so no spelling of a path
gets past it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from demoforge.errors import DemoforgeError


class OutputError(DemoforgeError):
    """An output path would overwrite or write into an input, or an earlier result."""


def resolved(path: str | Path) -> Path:
    """`path` absolute with symlinks and `..` resolved (a path that does not exist yet too)."""
    return Path(path).expanduser().resolve(strict=False)


def overlap(out: str | Path, inputs: Iterable[str | Path]) -> Path | None:
    """The first input that `out` is, contains or lies inside (resolved), else None."""
    o = resolved(out)
    for item in inputs:
        i = resolved(item)
        if o == i or o.is_relative_to(i) or i.is_relative_to(o):
            return Path(item)
    return None


def refuse_overlap(out: str | Path, inputs: Iterable[str | Path], *, what: str = "--out",
                   error: type[DemoforgeError] = OutputError) -> None:
    """Raise if `out` is, contains or lies inside any of `inputs`."""
    hit = overlap(out, inputs)
    if hit is None:
        return
    o, i = resolved(out), resolved(hit)
    relation = "is" if o == i else ("lies inside" if o.is_relative_to(i) else "contains")
    raise error(f"{what} {out}: {relation} the input {hit}; a command never writes into or over its inputs: "
                      f"choose an output outside {hit}")


def _parent_is_file(path: Path) -> Path | None:
    for parent in resolved(path).parents:
        if parent.exists():
            return parent if not parent.is_dir() else None
    return None


def guard_output_dir(out: str | Path, inputs: Iterable[str | Path] = (), *, what: str = "--out",
                     resumable: Callable[[Path], bool] | None = None, overwrite_flag: str | None = None,
                     error: type[DemoforgeError] = OutputError) -> bool:
    """Check that folder `out` may be written: not a file, no overlap with `inputs`, and absent or
    empty unless `resumable(out)` says it holds this same run. Returns True when `out` is resumed.
    `error`: the DemoforgeError subclass to raise (the calling module's own)."""
    out = Path(out)
    refuse_overlap(out, list(inputs), what=what, error=error)
    if out.exists() and not out.is_dir():
        raise error(f"{what} {out}: is a file, not a folder; choose a folder path that does not exist")
    if (blocker := _parent_is_file(out)) is not None:
        raise error(f"{what} {out}: {blocker} is a file, so no folder can be made under it; choose another path")
    if not out.exists() or not any(out.iterdir()):
        return False
    if resumable is not None and resumable(out):
        return True
    fix = f"choose a new {what}" + (f" or pass {overwrite_flag}" if overwrite_flag else "")
    raise error(f"{what} {out}: exists and is not empty (and not a run of this command with the same inputs "
                      f"to resume); {fix}")


def holds_files(out: str | Path) -> bool:
    """`out` is a folder with something in it. For a command that fills OUT only once its output
    is whole, a run that returns on such an OUT found it finished (`guard_output_dir`'s
    `resumable`) and wrote nothing."""
    out = Path(out)
    return out.is_dir() and any(out.iterdir())


def guard_output_file(out: str | Path, inputs: Iterable[str | Path] = (), *, what: str = "--out",
                      suffixes: tuple[str, ...] = (), error: type[DemoforgeError] = OutputError) -> Path:
    """Check that file `out` may be written (it may be replaced): not a folder, not one of the
    `inputs` nor inside one, and with one of `suffixes` when given. Returns `out` as a Path."""
    out = Path(out)
    refuse_overlap(out, list(inputs), what=what, error=error)
    if out.is_dir():
        raise error(f"{what} {out}: is a folder; give a file path")
    if (blocker := _parent_is_file(out)) is not None:
        raise error(f"{what} {out}: {blocker} is a file, so no file can be made under it; choose another path")
    if suffixes and out.suffix.lower() not in suffixes:
        raise error(f"{what} {out}: the file must end in {' or '.join(suffixes)} (got {out.suffix or 'none'!r})")
    return out


def write_file(out: str | Path, data: str | bytes) -> Path:
    """Write a report file whole or not at all: through `.NAME.partial` beside it (the next write
    of the same file replaces a killed one's), renamed over `out` once complete."""
    import os

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.partial")
    try:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out


LOCK_NAME = ".demoforge-lock"


def claim_temp(tmp: str | Path) -> int:
    """Make `tmp`, a command's temporary folder beside its output (a fixed name, so the next run
    of the same command finds it), empty and ours: a folder left by a killed run is removed, one
    a live run holds is refused. Returns the lock's file descriptor: hold it while writing,
    then `release_temp`."""
    import fcntl
    import os
    import shutil

    tmp = Path(tmp)
    if tmp.is_dir() and (tmp / LOCK_NAME).is_file():
        fd = os.open(tmp / LOCK_NAME, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputError(f"{tmp}: another run of this command is writing it; wait for it to finish or choose "
                              "another output") from None
        finally:
            os.close(fd)
    if tmp.exists() or tmp.is_symlink():
        shutil.rmtree(tmp) if tmp.is_dir() and not tmp.is_symlink() else tmp.unlink()  # left by a killed run
    tmp.mkdir(parents=True)
    fd = os.open(tmp / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def hold_folder(folder: str | Path) -> int:
    """Lock `folder` (made if absent) for this process, keeping what it holds (a resumable work
    folder): refused while another live run holds it. Returns the lock's file descriptor: hold it
    while writing, then `release_temp`. The lock file is LOCK_NAME inside the folder."""
    import fcntl
    import os

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise OutputError(f"{folder}: another run of this command is writing it; wait for it to finish or choose "
                          "another output") from None
    return fd


def release_temp(fd: int) -> None:
    import os

    os.close(fd)
