"""Where a dataset's episodes go in lerobot's files while `DatasetWriter` adds them: a cursor per
output stream (data, or one camera) that starts a new file when the current one is full, and
the data files written as episodes are added (one open at a time, moved into place when done)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from demoforge.dataset.layout import DATA_PATH
from demoforge.dataset.tables import fsync_file, parquet_writer


@dataclass
class FileCursor:
    """Where the next episode goes for one output stream (data, or one camera)."""

    file_number: int = 0  # files started so far - 1 (write order)
    bytes: int = 0  # segment bytes already assigned to the current file
    frames: int = 0  # frames already in the current file

    def place(self, nbytes: int, nframes: int, *, max_bytes: float, max_frames: float | None = None) -> int:
        """Assign a segment; returns the file number it goes into."""
        full = self.bytes + nbytes > max_bytes or (max_frames is not None and self.frames + nframes > max_frames)
        if self.frames > 0 and full:
            self.file_number, self.bytes, self.frames = self.file_number + 1, 0, 0
        self.bytes += nbytes
        self.frames += nframes
        return self.file_number



class DataFiles:
    """Data files written while episodes are added, one open file at a time (episodes are placed
    in file order). A file is written under a temporary name and moved to its own once the next
    one starts, or at close."""

    def __init__(self, root: Path, schema):
        self.root, self.schema = root, schema
        self.key: tuple[int, int] | None = None  # the open file's (chunk, file)
        self.path: Path | None = None  # the open file's name, and its writer on name + ".tmp"
        self.writer = None
        self.written: set[tuple[int, int]] = set()

    def add(self, key: tuple[int, int], table) -> None:
        if key != self.key:
            self._finish()
            self.key, self.path = key, self.root / DATA_PATH.format(chunk_index=key[0], file_index=key[1])
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.writer = parquet_writer(self._tmp(), self.schema)
        self.writer.write_table(table, row_group_size=max(1, table.num_rows))

    def _tmp(self) -> Path:
        return self.path.with_name(self.path.name + ".tmp")

    def _finish(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
            fsync_file(self._tmp())
            self._tmp().replace(self.path)
            self.written.add(self.key)

    def close(self) -> frozenset:
        """Finish the open file; returns every file written."""
        self._finish()
        return frozenset(self.written)

    def abort(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
            self._tmp().unlink(missing_ok=True)
