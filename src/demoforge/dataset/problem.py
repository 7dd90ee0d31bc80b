"""Problem: one thing wrong with a dataset, as every dataset check reports it (`check_dataset`,
the v2.1 and HDF5 checks, the doctor's structure findings)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a dataset."""

    code: str  # stable kind, e.g. "video.frames"; see the check_* functions
    file: str  # path relative to the dataset root where it was found
    message: str  # what is wrong, with the values seen and expected

    def __str__(self) -> str:
        return f"[{self.code}] {self.file}: {self.message}"
