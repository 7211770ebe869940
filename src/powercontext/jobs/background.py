"""``BackgroundWork``: the one owner of what a Server does beside its requests.

A job is anything with ``start``, ``stop(timeout_s)`` and a content-free ``detail``: the vector backfill
(``search/backfill.py``) today, the extraction of captured Sources beside it. The Server's lifespan calls
``start`` once it serves and ``drain`` when it shuts down; ``/health/ready`` shows each job's ``detail`` under
its name. A job that stops half-way must leave nothing half-written: each job's unit of work is its own
transaction, so a drain (or a killed process) loses at most the unit in flight, which is done again later.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Protocol

log = logging.getLogger("powercontext.jobs")

DRAIN_TIMEOUT_S = 5.0


class Job(Protocol):
    """One kind of background work (see the module)."""

    def start(self) -> None: ...
    def stop(self, timeout_s: float = DRAIN_TIMEOUT_S) -> None: ...
    def detail(self) -> dict[str, object]: ...


class BackgroundWork:
    """The registered jobs, in order; started together, drained in reverse order within one deadline."""

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._started = False

    def register(self, name: str, job: Job) -> None:
        """Add ``job`` under ``name`` (its key in ``detail``); a job registered after ``start`` starts at once."""
        with self._lock:
            if name in self._jobs:
                raise ValueError(f"a job named {name!r} is already registered")
            self._jobs[name] = job
            started = self._started
        if started:
            job.start()

    def names(self) -> list[str]:
        with self._lock:
            return list(self._jobs)

    def start(self) -> None:
        """Start every job (once); a job that fails to start is logged and the others still start."""
        with self._lock:
            if self._started:
                return
            self._started = True
            jobs = list(self._jobs.items())
        for name, job in jobs:
            try:
                job.start()
            except Exception as exc:  # one job's failure must not keep the Server (or the other jobs) from serving
                log.error("event=jobs.start.failed job=%s reason=%s", name, type(exc).__name__)

    def drain(self, timeout_s: float = DRAIN_TIMEOUT_S) -> None:
        """Stop every job, the last registered first, sharing ``timeout_s`` between them."""
        with self._lock:
            jobs = list(self._jobs.items())
        deadline = time.monotonic() + timeout_s
        for name, job in reversed(jobs):
            try:
                job.stop(max(deadline - time.monotonic(), 0.0))
            except Exception as exc:  # draining goes on: the store still has to be closed
                log.error("event=jobs.drain.failed job=%s reason=%s", name, type(exc).__name__)

    def detail(self) -> dict[str, dict[str, object]]:
        """Each job's content-free progress, by name (what ``/health/ready`` shows); a job with nothing to report
        (an empty detail) is left out."""
        with self._lock:
            jobs = list(self._jobs.items())
        details = ((name, job.detail()) for name, job in jobs)
        return {name: detail for name, detail in details if detail}
