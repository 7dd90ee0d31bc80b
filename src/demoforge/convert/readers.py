"""The public reader seam: one function per source format, returning canonical Episodes.

A reader is a `Reader` record: a `detect(path)` test and an `episodes(path)` function yielding the
source's episodes (`convert.episode.Episode`) in order, one at a time. Bake, and through it the
doctor and coverage (which read the baked dataset), take any format a reader is registered for:

    from demoforge.convert.readers import Reader, register_reader

    register_reader(Reader("my_csv", detect=lambda p: p.suffix == ".csv", episodes=read_my_csv,
                           describe="one CSV file per robot log"))

or, from an installed package, an entry point in the `demoforge.readers` group naming a Reader:

    [project.entry-points."demoforge.readers"]
    my_csv = "my_package.reader:READER"

Built in: `demoforge_raw` and `lerobot` (LeRobot v3.0 datasets; bake reads them in place),
`lerobot_v21` and `robomimic_hdf5`. A source that is not LeRobot v3.0 is imported first
(`convert.imports`): its episodes are written as a v3.0 dataset, which bake then reads.
Readers registered by users are tried before the built-in ones, in registration order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

from demoforge.convert.episode import BakeError, Episode, read_episode
from demoforge.convert.lerobot_v21 import is_v21, read_lerobot_v21
from demoforge.convert.robomimic import read_robomimic
from demoforge.dataset.check import v21_info
from demoforge.dataset.hdf5 import is_hdf5
from demoforge.dataset.layout import INFO_PATH
from demoforge.dataset.reader import open_dataset
from demoforge.raw.schema import CONTROLLER_PATH

ENTRY_POINT_GROUP = "demoforge.readers"


@dataclass(frozen=True)
class Reader:
    """One source format."""

    name: str  # registry key; the Episodes it yields carry it as `Episode.reader`
    detect: Callable[[Path], bool]  # True when the path holds this format (cheap: a suffix, a meta file)
    episodes: Callable[[Path], Iterable[Episode]]  # the source's episodes in order, one at a time
    describe: str = ""  # one line for listings and errors
    lerobot_v3: bool = False  # a LeRobot v3.0 dataset: bake reads it in place, nothing is imported


def _is_v3(path: Path) -> bool:
    return (path / INFO_PATH).is_file() and v21_info(path) is None


def _v3_episodes(path: Path) -> Iterator[Episode]:
    ds = open_dataset(path)
    for i in ds.episode_indices:
        yield read_episode(ds, i)


def _is_hdf5(path: Path) -> bool:
    return is_hdf5(path)


def _robomimic(path: Path) -> Iterator[Episode]:
    return read_robomimic(path)


def _is_v21(path: Path) -> bool:
    return is_v21(path)


def _v21(path: Path) -> Iterator[Episode]:
    return read_lerobot_v21(path)


BUILT_IN = (
    Reader("demoforge_raw", lambda p: _is_v3(p) and source_kind_of(p) == "demoforge_raw", _v3_episodes,
           "a raw demoforge dataset (LeRobot v3.0 with meta/demoforge/controller.json)", lerobot_v3=True),
    Reader("lerobot", _is_v3, _v3_episodes, "any other LeRobot v3.0 dataset", lerobot_v3=True),
    Reader("lerobot_v21", _is_v21, _v21, "a LeRobot v2.1 dataset (one parquet and one mp4 per episode)"),
    Reader("robomimic_hdf5", _is_hdf5, _robomimic,
           "robomimic's HDF5 layout, data/demo_<i>/{obs,actions,states} (needs demoforge[hdf5])"),
)
_USER: dict[str, Reader] = {}
_LOADED: list[bool] = []  # entry points loaded once per process


def source_kind_of(path: Path) -> str:
    """`episode.source_kind` of the v3.0 dataset at `path` without opening its tables."""
    return "demoforge_raw" if (Path(path) / CONTROLLER_PATH).is_file() else "lerobot"


def register_reader(reader: Reader) -> Reader:
    """Make `reader` available to bake and `read_source`; returns it. A name cannot be taken twice."""
    if not isinstance(reader, Reader):
        raise BakeError(f"register_reader: expected a demoforge.convert.readers.Reader, got {reader!r}")
    taken = {r.name for r in BUILT_IN} | set(_USER)
    if reader.name in taken and _USER.get(reader.name) is not reader:
        raise BakeError(f"register_reader: a reader named {reader.name!r} exists already; registered: {sorted(taken)}")
    _USER[reader.name] = reader
    return reader


def unregister_reader(name: str) -> None:
    """Forget a reader registered by `register_reader` (tests, notebooks)."""
    _USER.pop(name, None)


def _load_entry_points() -> None:
    if _LOADED:
        return
    _LOADED.append(True)
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            reader = ep.load()
        except Exception as exc:  # the user's package: name it
            raise BakeError(f"entry point {ep.name!r} = {ep.value!r} in group {ENTRY_POINT_GROUP!r} does not load "
                            f"({type(exc).__name__}: {exc}); fix or uninstall the package that declares it") from exc
        if callable(reader) and not isinstance(reader, Reader):
            reader = reader()
        if not isinstance(reader, Reader):
            raise BakeError(f"entry point {ep.name!r} = {ep.value!r} in group {ENTRY_POINT_GROUP!r} gives {reader!r}, "
                            "not a demoforge.convert.readers.Reader")
        register_reader(reader)


def registered() -> dict[str, Reader]:
    """Every reader by name: the users' (registered, then entry points) first, then the built-in ones."""
    _load_entry_points()
    return {**_USER, **{r.name: r for r in BUILT_IN}}


def reader_for(path: str | Path, name: str | None = None) -> Reader:
    """The reader named `name`, or the first whose `detect` accepts `path`."""
    path = Path(path)
    readers = registered()
    if name is not None:
        if name not in readers:
            raise BakeError(f"reader {name!r} is not registered; registered: {sorted(readers)}")
        return readers[name]
    if not path.exists():
        raise BakeError(f"{path}: no such file or folder")
    for reader in readers.values():
        if reader.detect(path):
            return reader
    known = "; ".join(f"{r.name}: {r.describe}" for r in readers.values())
    raise BakeError(f"{path}: no reader recognises it (readers: {known}); register one for its format with "
                    f"demoforge.convert.readers.register_reader or a {ENTRY_POINT_GROUP!r} entry point")


def read_source(path: str | Path, name: str | None = None) -> Iterator[Episode]:
    """The episodes of the source at `path`, by the reader named `name` or the one that detects it."""
    yield from reader_for(path, name).episodes(Path(path))
