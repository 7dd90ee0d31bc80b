"""Progress of a long command: a rich bar with rate and ETA on a terminal, plain lines otherwise.

    with StepProgress("render", "episodes", quiet=quiet) as progress:
        render_dataset(..., progress=progress)     # it takes the library's ProgressEvents

The one display of every command: it consumes `demoforge.stage.ProgressEvent`s, whether a stage
runner or a single function (doctor's scan, viz tiles) sent them. On a terminal (stderr a TTY) a
rich bar shows done/total, the rate and the time left. Elsewhere (CI logs, pipes) a line per step
goes to stderr, at most one every `PLAIN_EVERY_S` seconds plus the last, each with the rate and an
ETA: `render: 12/40 episodes, 1.9 episodes/s, eta 15 s`. With `outcomes`, each episode event that
carries one also prints `[done/total] item: success` (or its failure) on stdout, for the commands
whose episodes succeed or fail (generate, rollout, eval, relabel); once any event carried an
outcome, the bar and the lines add the success rate so far. `stage(name)` starts a new count under
another name (`run`: one display over its stages). `quiet` prints nothing. The command's own
summary line is printed by the command.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:  # for the annotations only
    from demoforge.stage.protocol import ProgressEvent

PLAIN_EVERY_S = 5.0  # shortest interval between two plain progress lines [s]


class StepProgress:
    """Shows the `ProgressEvent`s it is called with as a bar or as throttled lines (see the module docstring)."""

    def __init__(self, what: str, unit: str = "episodes", *, quiet: bool = False, tty: bool | None = None,
                 outcomes: bool = False):
        self.what, self.unit, self.quiet, self.outcomes = what, unit, quiet, outcomes
        self.tty = sys.stderr.isatty() if tty is None else tty
        self.start = time.perf_counter()
        self.last_line = -float("inf")
        self.episodes = 0  # episode events seen: the count where an event carries no `done`
        self.judged = self.succeeded = 0  # episode events that carried an outcome, and their successes
        self.bar = None

    def __enter__(self) -> StepProgress:
        if not self.quiet and self.tty:
            # lazy: rich.progress is only wanted on a terminal (about 40 ms of `demoforge --help` otherwise)
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("[bold]{task.fields[what]}"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), transient=True)
            self.job = self.bar.add_task(self.unit, total=None, rate="", what=self.what)
            self.bar.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()

    def stage(self, name: str) -> None:
        """Count afresh under `name` (a pipeline's next stage)."""
        self.what, self.start, self.last_line = name, time.perf_counter(), -float("inf")
        self.episodes = self.judged = self.succeeded = 0
        if self.bar is not None:
            self.bar.reset(self.job, total=None, completed=0, rate="", what=name)

    def __call__(self, event: ProgressEvent) -> None:
        """An episode event moves the display; item events (a shard is final) show nothing."""
        if event.kind != "episode" or self.quiet:
            return
        self.episodes += 1
        done = self.episodes if event.done is None else event.done
        if event.success is not None or event.failure is not None:
            self.judged += 1
            self.succeeded += bool(event.success)
            if self.outcomes:
                total = f"/{event.total}" if event.total else ""
                typer.echo(f"[{done}{total}] {event.item}: {'success' if event.success else event.failure}")
        if event.total is not None:
            self.show(done, event.total)

    def line(self, done: int, total: int, now: float) -> str:
        """`what: done/total unit, rate unit/s, eta T s` (`took T s` at the end)."""
        elapsed = max(now - self.start, 1e-9)
        rate = done / elapsed
        eta = f"eta {(total - done) / rate:.0f} s" if rate > 0 and done < total else f"took {elapsed:.0f} s"
        return f"{self.what}: {done}/{total} {self.unit}, {self.success()}{rate:.2f} {self.unit}/s, {eta}"

    def success(self) -> str:
        """`success 87.5%, ` once an event carried an outcome, else nothing."""
        return f"success {100.0 * self.succeeded / self.judged:.1f}%, " if self.judged else ""

    def show(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if self.bar is not None:
            rate = done / max(now - self.start, 1e-9)
            self.bar.update(self.job, completed=done, total=total, rate=f"{self.success()}{rate:.2f} {self.unit}/s")
        elif done >= total or now - self.last_line >= PLAIN_EVERY_S:
            self.last_line = now
            typer.echo(self.line(done, total, now), err=True)
