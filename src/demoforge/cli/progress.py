"""Progress of a long command: a rich bar with rate and ETA on a terminal, plain lines otherwise.

    with StepProgress("render", "episodes", quiet=quiet) as progress:
        render_dataset(..., progress=progress.event)     # a stage's ProgressEvents
        write_tiles(..., on_episode=progress.update)     # or (done, total) calls

On a terminal (stderr a TTY) a rich bar shows done/total, the rate and the time left. Elsewhere
(CI logs, pipes) a line per step goes to stderr, at most one every `PLAIN_EVERY_S` seconds plus
the last, each with the rate and an ETA: `render: 12/40 episodes, 1.9 episodes/s, eta 15 s`.
`quiet` prints nothing. The command's own summary line is printed by the command.
"""

from __future__ import annotations

import sys
import time

import typer

PLAIN_EVERY_S = 5.0  # shortest interval between two plain progress lines [s]


class StepProgress:
    """Reports `update(done, total)` calls as a bar or as throttled lines (see the module docstring)."""

    def __init__(self, what: str, unit: str, *, quiet: bool = False, tty: bool | None = None):
        self.what, self.unit, self.quiet = what, unit, quiet
        self.tty = sys.stderr.isatty() if tty is None else tty
        self.start = time.perf_counter()
        self.last_line = -float("inf")
        self.bar = None

    def __enter__(self) -> StepProgress:
        if not self.quiet and self.tty:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn(f"[bold]{self.what}"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), transient=True)
            self.job = self.bar.add_task(self.unit, total=None, rate="")
            self.bar.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()

    def line(self, done: int, total: int, now: float) -> str:
        """`what: done/total unit, rate unit/s, eta T s` (`took T s` at the end)."""
        elapsed = max(now - self.start, 1e-9)
        rate = done / elapsed
        eta = f"eta {(total - done) / rate:.0f} s" if rate > 0 and done < total else f"took {elapsed:.0f} s"
        return f"{self.what}: {done}/{total} {self.unit}, {rate:.2f} {self.unit}/s, {eta}"

    def update(self, done: int, total: int) -> None:
        if self.quiet:
            return
        now = time.perf_counter()
        if self.bar is not None:
            rate = done / max(now - self.start, 1e-9)
            self.bar.update(self.job, completed=done, total=total, rate=f"{rate:.2f} {self.unit}/s")
        elif done >= total or now - self.last_line >= PLAIN_EVERY_S:
            self.last_line = now
            typer.echo(self.line(done, total, now), err=True)

    def event(self, event) -> None:
        """A stage's `demoforge.stage.ProgressEvent`: its episode events drive the display."""
        if event.kind == "episode" and event.total is not None:
            self.update(event.done, event.total)
