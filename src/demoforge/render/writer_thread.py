"""A writer thread: writer calls run in order off the rendering thread, so encoding and
writing overlap rendering (x264 and numpy release the GIL while they work)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable


class WriterThread:
    """Runs queued calls in order on one thread. The queue is bounded: the producer never
    runs more than QUEUE calls ahead (memory stays at a few frames)."""

    QUEUE = 16

    def __init__(self) -> None:
        self._jobs: queue.Queue = queue.Queue(maxsize=self.QUEUE)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="render-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            if self._error is None:  # after a failure, drain without running
                try:
                    job()
                except BaseException as exc:  # noqa: BLE001 - re-raised on the rendering thread
                    self._error = exc

    def put(self, job: Callable[[], object]) -> None:
        if self._error is not None:
            raise self._error
        self._jobs.put(job)

    def join(self) -> None:
        """Wait for every queued call; re-raise the first failure."""
        self._jobs.put(None)
        self._thread.join()
        if self._error is not None:
            raise self._error
