"""Stated ranges for the numeric options: every number a command takes has one, and NaN or
infinity is never accepted (a click FloatRange lets NaN through: every comparison with it is
false). Use as `typer.Option(1.0, "--settle-s", callback=finite(0.0, 60.0, low_open=True))`
for floats; integers use typer's own `min=`/`max=`."""

from __future__ import annotations

import math

import typer

from demoforge.fields import MAX_ENVS, MAX_EPISODE_INDEX, MAX_EPISODES, MAX_PROBLEMS, MAX_SEED, MAX_WORKERS

__all__ = ["MAX_ENVS", "MAX_EPISODE_INDEX", "MAX_EPISODES", "MAX_PROBLEMS", "MAX_SEED", "MAX_WORKERS", "finite"]


def finite(low: float | None = None, high: float | None = None, *, low_open: bool = False):
    """A typer callback accepting finite floats in [low, high] ((low, high] with `low_open`)."""

    def check(value):
        if value is None:
            return value
        bad = not math.isfinite(value)
        bad |= low is not None and (value <= low if low_open else value < low)
        bad |= high is not None and value > high
        if bad:
            lo = "-inf" if low is None else f"{low:g}"
            hi = "inf" if high is None else f"{high:g}"
            raise typer.BadParameter(f"{value!r} is not a finite number in {'(' if low_open else '['}{lo}, {hi}]")
        return value

    return check
