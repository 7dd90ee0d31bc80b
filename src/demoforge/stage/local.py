"""The local executor of `run_stage`: `n` spawned worker processes that, with this process, take
the next work item whenever they are free (see `WorkerPool`), and the guard against a script that
starts a run while a worker imports it."""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.connection
import pickle
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable

from demoforge.stage.protocol import Progress, StageError
from demoforge.stage.runner import ready, run_one, wait_ready


def refuse_in_worker_start_up(call: str, *, error: type[Exception] = StageError) -> None:
    """Raise if this process is a spawned worker still importing its parent's main script: a
    script that starts a run at module level would start it again in every worker."""
    if getattr(multiprocessing.current_process(), "_inheriting", False):  # what multiprocessing itself checks
        raise error(f"{call} was started by a worker process while it imported the main script; a script "
                           "that runs with workers > 1 must start it under `if __name__ == \"__main__\":`")


class WorkerPool:
    """`n` spawned worker processes that, with this process, take a run's items one at a time in
    canonical order whenever they are free (nothing is dealt up front, so the tail is at most
    one item). They start importing at once; `run` gives them the run.

    One pipe per worker: the run goes down it, ("event", progress event) and ("error",
    exception) come back. A worker killed in the middle of a message leaves only its own pipe
    unreadable (EOF here), where a shared queue's lock, held by the dead worker, would block
    every other writer. The run is not a Process argument: start() writes those to the child,
    which reads them while it imports, so a large run spec held this process up for the
    child's whole start-up (and for ever if the child died in it, e.g. a script without a
    __main__ guard). A listener thread sends it instead."""

    def __init__(self, n: int, *, work: Callable, report: bool, wait: Callable | None = None):
        self.work = work  # work(run, k, report): runs item k of `run` (a module-level function: workers import it)
        # wait(run, k, stopped) -> bool: holds item k until the items it needs are done (False: the run
        # stopped meanwhile); a module-level function too. None: items need nothing
        self.wait = wait
        ctx = multiprocessing.get_context("spawn")  # the writer's encoder threads and GL contexts do not survive fork
        self.taken = ctx.Value("i", 0)  # items[:taken] are handed out
        self.procs, self.conns = [], []
        for _ in range(n):
            mine, theirs = ctx.Pipe(duplex=True)
            p = ctx.Process(target=_worker, args=(work, self.taken, theirs, report, wait), daemon=True)
            p.start()
            theirs.close()  # the worker holds the only other end: its exit reads as EOF
            self.procs.append(p)
            self.conns.append(mine)

    def run(self, run, items: list[int], progress: Progress | None = None,
            between: Callable[[bool], object] | None = None) -> None:
        """Run `items` here and on the workers. `between(idle)` runs here after each item of this
        process (idle False) and, once no item is left to take or while this process waits for
        what its item needs (`wait`), whenever a worker may have finished one (idle True): the
        merge feeds so.

        A worker's exception is raised here once every slot has stopped; a worker that dies
        (killed, out of memory) is the stage's error. Either way a rerun resumes the items."""
        taken, procs = self.taken, self.procs
        lock = threading.Lock()
        errors: list[BaseException] = []

        def report(event: tuple) -> None:
            if progress is not None:
                with lock:
                    progress(event)

        listener = threading.Thread(target=_listen, args=(run, items, self.conns, procs, taken, report, errors),
                                    daemon=True)
        listener.start()

        def stopped() -> bool:  # asked while this slot waits for what its item needs: merge meanwhile
            if between is not None:
                between(True)
            return bool(errors)

        try:
            while not errors and (k := _take(taken, items)) is not None:
                if self.wait is not None and not self.wait(run, k, stopped):
                    break
                self.work(run, k, report)
                if between is not None:
                    between(False)
            while between is not None and not errors and any(p.is_alive() for p in procs):
                between(True)
                multiprocessing.connection.wait([p.sentinel for p in procs], timeout=0.05)
        except BaseException:
            _stop(taken, len(items))
            for p in procs:
                p.terminate()  # their finished episodes are durable; a rerun continues
            raise
        finally:
            for p in procs:
                p.join()
            listener.join()  # returns once every worker's pipe is at EOF
        errors += [_died(p, run) for p in procs if p.exitcode != 0 and not errors]  # died without a word
        if errors:
            raise errors[0]

    def close(self) -> None:
        """Stop workers that were never given a run (their pipe closes: they exit)."""
        for conn in self.conns:
            conn.close()
        for p in self.procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
                p.join()


def _take(taken, items: list[int]) -> int | None:
    """The next item to run, or None once all are handed out."""
    with taken.get_lock():
        if taken.value >= len(items):
            return None
        taken.value += 1
        return items[taken.value - 1]


def _stop(taken, n: int) -> None:
    """Hand out no more items (past `n`: a slot waiting for what its item needs gives up too)."""
    with taken.get_lock():
        taken.value = n + 1


def _stopped(taken, n: int) -> bool:
    return taken.value > n


def _worker(work: Callable, taken, conn, report: bool, wait: Callable | None = None) -> None:
    # A worker outliving a killed parent would go on holding shards a rerun must continue:
    # on Linux it is killed with the parent; elsewhere it stops before its next item.
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    parent = multiprocessing.parent_process()
    try:
        run, items = pickle.loads(conn.recv_bytes())
    except EOFError:  # closed without a run (the parent failed before it had one)
        return
    try:
        while parent.is_alive() and (k := _take(taken, items)) is not None:
            if wait is not None and not wait(run, k, lambda: _stopped(taken, len(items)) or not parent.is_alive()):
                break
            work(run, k, (lambda e: conn.send(("event", e))) if report else None)
    except BaseException as e:  # noqa: BLE001 - re-raised in the parent
        conn.send(("error", _picklable(e)))
        raise SystemExit(1) from None
    finally:
        conn.close()


def _picklable(e: BaseException) -> BaseException:
    """`e` if it survives the trip to the parent, else a StageError with its traceback."""
    try:
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:  # noqa: BLE001 - any pickling failure: send the traceback as text
        return StageError("a stage worker failed:\n" + "".join(traceback.format_exception(e)))


def _listen(run, items: list[int], conns: list, procs, taken, report: Callable, errors: list) -> None:
    """Sends every worker the run and its items, then hands their progress events to `report`
    and notes their errors and deaths (the first one stops the hand-out of items); returns when
    every worker's pipe is closed."""
    spec, n = pickle.dumps((run, items)), len(items)
    proc_of = dict(zip(conns, procs))
    said = set()  # the workers that reported an error before exiting

    def closed(conn) -> None:  # EOF: the worker exited; without a word first, it died
        p = proc_of[conn]
        if p not in said and _exit_code(p) != 0 and not errors:
            errors.append(_died(p, run))
            _stop(taken, n)

    open_ = []
    for conn in conns:
        try:
            conn.send_bytes(spec)
            open_.append(conn)
        except OSError:  # it died before reading it
            closed(conn)
    while open_:
        for conn in multiprocessing.connection.wait(open_, timeout=0.2):
            try:
                msg = conn.recv()
            except (EOFError, OSError):  # the worker exited (or died in the middle of a message)
                open_.remove(conn)
                closed(conn)
                continue
            if msg[0] == "error":
                said.add(proc_of[conn])
                errors.append(msg[1])
                _stop(taken, n)
                continue
            try:
                report(msg[1])
            except Exception as e:  # noqa: BLE001 - a failing progress callback stops the run; keep draining
                errors.append(e)
                _stop(taken, n)


def _exit_code(p, timeout: float = 10.0) -> int | None:
    """`p`'s exit code once it has exited (None if it has not within `timeout`). Another thread
    joining `p` at the same time can reap it first, and `p.exitcode` reads None until that
    thread has stored the code: wait for it."""
    deadline = time.monotonic() + timeout
    p.join(timeout)
    while p.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return p.exitcode


def _died(p, run) -> Exception:
    return run.stage.error(f"{run.stage.name} worker {p.pid} died (exit code {p.exitcode}); finished episodes are "
                           f"kept in {run.work}: rerun the same command to resume")


class LocalExecutor:
    """`run_stage`'s executor on this machine: `workers` slots, this process and `workers - 1`
    spawned workers, started by `start` (run_stage calls it once the output guard has let the run
    go on, so they import while the stage reads its inputs, and a refused OUT starts none) or by
    the first `run`. Use it as a context manager, or `close` it."""

    def __init__(self, workers: int = 1):
        if not (isinstance(workers, int) and workers >= 1):
            raise StageError(f"workers: {workers!r} must be an integer >= 1")
        self.slots = workers
        self._pool = None

    def start(self) -> None:
        """Spawn the workers (once; nothing to do for one slot)."""
        if self._pool is None and self.slots > 1:
            self._pool = WorkerPool(self.slots - 1, work=run_one, report=True, wait=wait_ready)

    def run(self, run, items: list[int], progress: Progress | None, between: Callable[[bool], object]) -> None:
        """Run `items` of `run` (a `runner.StageRun`) on the slots; `between(idle)` as in `WorkerPool.run`."""
        self.start()
        if self._pool is not None:
            self._pool.run(run, items, progress, between=between)
            return

        for k in items:
            if not ready(run, k):  # what it needs is an earlier item: run before it, or final already
                raise StageError(f"{run.stage.name}: item {run.labels[k]} needs items that are neither final nor "
                                 "run before it")
            run_one(run, k, progress)
            between(False)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def __enter__(self) -> "LocalExecutor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
