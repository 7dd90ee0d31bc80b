"""What every plug-in check shares: the error, the report, the exact comparison and the
twice-from-one-seed harness with the global random state guarded.

A check builds the plug-in afresh for every run (`run(seed)` makes new objects), so nothing
carried between runs can hide a difference. Outputs are compared exactly: arrays by shape, dtype
and bytes, floats by their bits, containers key by key; the first difference is named by its path
(`poses[2].pos[0]`).
"""

from __future__ import annotations

import dataclasses
import random
import struct
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from demoforge.errors import DemoforgeError

PERTURB_SEED = 0x5EED  # the global generators are seeded with this before the second run


class DeterminismError(DemoforgeError):
    """A plug-in gave different outputs from the same seed, used global random state, ignored a
    seed it must honour, or changed its inputs."""


class DeterminismWarning(UserWarning):
    """A plug-in gave the same output for two different seeds (legitimate when it draws nothing)."""


@dataclass(frozen=True)
class CheckReport:
    """What a check ran and found; returned when the plug-in passed."""

    plugin: str  # what was checked, e.g. "task family 'pnp'"
    runs: int  # times the plug-in was run (fresh objects each time)
    passed: tuple[str, ...]  # the properties that held, in words
    warnings: tuple[str, ...] = ()  # what held but deserves a look (e.g. the seed changes nothing)
    notes: tuple[str, ...] = ()  # what was not checked, and why

    def __str__(self) -> str:
        lines = [f"{self.plugin}: {self.runs} runs, {len(self.passed)} checks passed"]
        lines += [f"  ok: {p}" for p in self.passed]
        lines += [f"  warning: {w}" for w in self.warnings]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _float_bits(x: float) -> bytes:
    return struct.pack("<d", x)


def _array_difference(a: np.ndarray, b: np.ndarray, path: str) -> str | None:
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"{path}: shape/dtype {a.shape} {a.dtype} vs {b.shape} {b.dtype}"
    if a.dtype == object:
        for k, (x, y) in enumerate(zip(a.reshape(-1), b.reshape(-1), strict=True)):
            found = first_difference(x, y, f"{path}[flat {k}]")
            if found:
                return found
        return None
    if a.tobytes() == b.tobytes():
        return None
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    width = a.dtype.itemsize
    raw_a, raw_b = flat_a.view(np.uint8).reshape(-1, width), flat_b.view(np.uint8).reshape(-1, width)
    k = int(np.flatnonzero((raw_a != raw_b).any(axis=1))[0])
    index = np.unravel_index(k, a.shape) if a.ndim else ()
    where = "[" + ", ".join(str(int(i)) for i in index) + "]"
    return f"{path}{where}: {flat_a[k].item()!r} vs {flat_b[k].item()!r}"


def first_difference(a: Any, b: Any, path: str = "output") -> str | None:
    """Where `a` and `b` first differ, as `path: a vs b`, or None when they are identical
    (arrays by bytes, floats by bits, mappings by key, sequences and dataclasses in order)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return f"{path}: {type(a).__name__} vs {type(b).__name__}"
        return _array_difference(a, b, path)
    if type(a) is not type(b):
        return f"{path}: type {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, float | np.floating):
        return None if _float_bits(float(a)) == _float_bits(float(b)) else f"{path}: {float(a)!r} vs {float(b)!r}"
    if isinstance(a, Mapping):
        if set(a) != set(b):
            missing, extra = sorted(set(a) - set(b), key=repr), sorted(set(b) - set(a), key=repr)
            return f"{path}: keys only in the first run {missing}, only in the second {extra}"
        for key in sorted(a, key=repr):
            found = first_difference(a[key], b[key], f"{path}[{key!r}]")
            if found:
                return found
        return None
    if isinstance(a, list | tuple):
        for k, (x, y) in enumerate(zip(a, b, strict=False)):
            found = first_difference(x, y, f"{path}[{k}]")
            if found:
                return found
        return None if len(a) == len(b) else f"{path}: length {len(a)} vs {len(b)}"
    if isinstance(a, set | frozenset):
        return None if a == b else f"{path}: only in the first run {sorted(a - b)}, only in the second {sorted(b - a)}"
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        for f in dataclasses.fields(a):
            found = first_difference(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
            if found:
                return found
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"


@dataclass(frozen=True)
class _GlobalRandom:
    """The state of Python's `random` and NumPy's legacy global generator."""

    python: tuple
    numpy: tuple

    @classmethod
    def now(cls) -> _GlobalRandom:
        return cls(random.getstate(), np.random.get_state())

    def restore(self) -> None:
        random.setstate(self.python)
        np.random.set_state(self.numpy)

    def changed(self) -> list[str]:
        """Which global generators moved since this snapshot."""
        out = []
        if random.getstate() != self.python:
            out.append("Python's `random` module")
        if first_difference(np.random.get_state(), self.numpy) is not None:
            out.append("NumPy's global `np.random` state")
        return out


def _perturb() -> None:
    random.seed(PERTURB_SEED)
    np.random.seed(PERTURB_SEED)


def fail(plugin: str, what: str, fix: str) -> DeterminismError:
    return DeterminismError(f"{plugin}: {what}. Fix: {fix}")


FIX_SEED = ("draw every random choice from the numpy.random.Generator the plug-in is given (or one derived "
            "from its seed with SeedSequence), never from global state, the clock, object ids or set order")


@dataclass
class Harness:
    """Runs one plug-in from fresh objects and checks what every plug-in must satisfy."""

    plugin: str  # named in every message
    run: Callable[[int], Any]  # seed -> comparable output; builds the plug-in and its inputs afresh
    passed: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    runs: int = 0

    def _once(self, seed: int) -> Any:
        self.runs += 1
        return self.run(seed)

    def same_seed(self, seed: int) -> Any:
        """Run from `seed` twice (the second time after reseeding the global generators): the
        outputs must be identical and the global generators untouched. Returns the output."""
        before = _GlobalRandom.now()
        try:
            first = self._once(seed)
            moved = before.changed()
            if moved:
                raise fail(self.plugin, f"it consumed {' and '.join(moved)} (a run from seed {seed} moved it)",
                           FIX_SEED)
            _perturb()
            second = self._once(seed)
            diff = first_difference(first, second)
            if diff is not None:
                before.restore()
                third = self._once(seed)
                if first_difference(first, third) is None:
                    raise fail(self.plugin, f"its output depends on the global random state: after reseeding "
                               f"`random` and `np.random` the same seed {seed} gave a different output ({diff})",
                               FIX_SEED)
                raise fail(self.plugin, f"two runs from seed {seed} in fresh objects differ: {diff}", FIX_SEED)
        finally:
            before.restore()
        self.passed += [f"two runs from seed {seed} in fresh objects are identical",
                        "uses neither Python's `random` nor NumPy's global state"]
        return first

    def other_seed(self, seed: int, other: int, first: Any, *, required: bool = False) -> None:
        """Run from `other`: a plug-in that draws must give another output. `required`: the same
        output is an error, else a warning (legitimate when nothing is drawn)."""
        before = _GlobalRandom.now()
        try:
            again = self._once(other)
        finally:
            before.restore()
        if first_difference(first, again) is None:
            what = f"seeds {seed} and {other} give identical outputs: it ignores the seed"
            if required:
                raise fail(self.plugin, what, "derive the plug-in's Generator from the seed it is given")
            self.warnings.append(what + " (fine when it draws nothing)")
            warnings.warn(f"{self.plugin}: {what}", DeterminismWarning, stacklevel=3)
        else:
            self.passed.append(f"seeds {seed} and {other} give different outputs")

    def unchanged(self, what: str, before: Any, after: Any) -> None:
        """An input `what` must look the same after the runs as before."""
        diff = first_difference(before, after, what)
        if diff is not None:
            raise fail(self.plugin, f"it changed its input {what}: {diff}",
                       "work on a copy; a plug-in must never write into what it is given")
        self.passed.append(f"leaves {what} unchanged")

    def report(self) -> CheckReport:
        once = tuple(dict.fromkeys(self.passed))  # a property checked on every run is listed once
        return CheckReport(self.plugin, self.runs, once, tuple(self.warnings), tuple(self.notes))

