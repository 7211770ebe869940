"""The extraction worker: pending Sources become Atomic Memory, off the request path.

It claims a few pending Sources at a time with a lease (``SourceStore.claim_sources``), asks the extractor for
operations, and has the write service apply them with the Source as lineage in one transaction. Whatever goes
wrong leaves the Source pending with its reason: a provider failure or a stale compare-and-swap is retried with
backoff, a Source only a model can read waits for one (``waiting-for-model``), and after ``max_attempts`` it is
marked failed. A Server killed mid-extraction leaves its leases to expire; any Server then claims them again.
Logs name counts and reasons only, never a Scope, a Source id or content.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol

from powercontext.store.errors import SourceLeaseLost, StoreError
from powercontext.store.source_records import (
    WAITING_FOR_MODEL,
    ClaimedSource,
    ExtractionPolicy,
    PolicyChoice,
    SourceOperation,
    SourceRecord,
    SourceStore,
)
from powercontext.writes.service import WriteService

log = logging.getLogger("powercontext.jobs")

LEASE_S = 120.0
POLL_S = 2.0
# After a capture wakes the worker it waits this long first: the prompt's own prepare request is in flight at that
# moment, and extraction must not compete with it (the next prompt is seconds away). bench/capture_overhead.py
SETTLE_S = 1.0
BATCH = 8
MAX_ATTEMPTS = 8
MAX_BACKOFF_S = 600.0


class ExtractionUnavailable(Exception):
    """The extractor could not answer now (a provider error or timeout): the Source is retried later."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Extractor(Protocol):
    model_backed: bool

    def operations(self, source: SourceRecord) -> list[SourceOperation] | None:
        """What to write from ``source`` ([]: nothing), or None when only a model could tell. Raises
        ``ExtractionUnavailable`` when it cannot answer now."""
        ...


def _after(seconds: float) -> str:
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class ExtractionWorker:
    """A ``jobs.background.Job`` (see the module)."""

    def __init__(
        self,
        writes: WriteService,
        store: SourceStore,
        extractor: Extractor,
        *,
        lease_s: float = LEASE_S,
        poll_s: float = POLL_S,
        settle_s: float = SETTLE_S,
        max_attempts: int = MAX_ATTEMPTS,
    ) -> None:
        self._writes, self._store = writes, store
        self.extractor = extractor  # replaceable before ``start`` (the Runtime sets the model extractor)
        # Which extracted writes wait in the review inbox: "model" (model-extracted ones), "all" or "none".
        self.review = "model"
        self.lease_s, self._poll_s, self._settle_s, self._max_attempts = lease_s, poll_s, settle_s, max_attempts
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._counts = {"done": 0, "in_review": 0, "skipped": 0, "deferred": 0, "failed": 0, "lease_lost": 0}
        self._last_reason: str | None = None
        self._troubled = False  # an error or a Source given up since start
        writes.on_capture(self._wake.set)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="powercontext-extraction", daemon=True)
            self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Finish the Source in hand (its own transaction), then stop; unclaimed Sources stay pending."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def detail(self) -> dict[str, object]:
        """Counts of what it did, once something went wrong (a provider or store error, a Source given up); a
        worker that only extracts has nothing for ``/health/ready`` to report."""
        with self._lock:
            if not self._troubled:
                return {}
            running = self._thread is not None and self._thread.is_alive()
            extractor = "model" if self.extractor.model_backed else "explicit"
            state = "running" if running else "stopped"
            return {"state": state, "extractor": extractor, **self._counts, "last_reason": self._last_reason}

    def run_once(self) -> int:
        """Claim and extract one batch now; how many Sources were claimed (the thread's loop, one turn)."""
        claims = self._store.claim_sources(self._owner, self.lease_s, BATCH, self.extractor.model_backed)
        for claim in claims:
            if self._stop.is_set():
                break  # the rest of the batch keeps its lease until it expires, then is claimed again
            self._extract(claim)
        return len(claims)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                claimed = self.run_once()
            except StoreError as exc:  # the store is down or full: try again after a pause
                self._note("deferred", exc.code)
                claimed = 0
            except Exception as exc:  # never let the thread die silently
                self._note("deferred", type(exc).__name__)
                claimed = 0
            if not claimed:
                woken = self._wake.wait(self._poll_s)
                self._wake.clear()
                if woken:
                    self._stop.wait(self._settle_s)

    def _extract(self, claim: ClaimedSource) -> None:
        try:
            operations = self.extractor.operations(claim.record)
            if operations is None:
                self._writes.defer_source(claim, WAITING_FOR_MODEL, None, give_up=False)
                self._note("deferred", WAITING_FOR_MODEL)
                return
            if operations and self._reviewed(claim.record.ref.scope_id):
                self._writes.propose_source(claim, operations)
                self._note("in_review", None)
                return
            self._writes.apply_source(claim, operations, "done" if operations else "skipped")
            self._note("done" if operations else "skipped", None)
        except SourceLeaseLost:
            self._note("lease_lost", None)
        except ExtractionUnavailable as exc:
            self._retry(claim, exc.reason)
        except StoreError as exc:  # a stale compare-and-swap, a memory no longer active: decide again later
            self._retry(claim, exc.code)

    def _reviewed(self, scope_id: str) -> bool:
        """Whether this extractor's writes wait in the Scope's review inbox: the Scope's policy, else the Server's."""
        return self.policy_for(scope_id).choice(self.extractor.model_backed) == "review"

    def policy_for(self, scope_id: str) -> ExtractionPolicy:
        """The Scope's extraction policy, or the Server's default (``review``) when it has none."""
        own = self._store.read_extraction_policy(scope_id)
        if own is not None:
            return own
        explicit: PolicyChoice = "review" if self.review == "all" else "apply"
        model: PolicyChoice = "apply" if self.review == "none" else "review"
        return ExtractionPolicy(explicit, model)

    def _retry(self, claim: ClaimedSource, reason: str) -> None:
        attempts = claim.record.attempts  # the claim counted this attempt already
        give_up = attempts >= self._max_attempts
        retry_at = _after(min(2.0**attempts, MAX_BACKOFF_S))
        try:
            self._writes.defer_source(claim, reason, retry_at, give_up)
        except SourceLeaseLost:
            self._note("lease_lost", None)
            return
        self._note("failed" if give_up else "deferred", reason)

    def _note(self, outcome: str, reason: str | None) -> None:
        with self._lock:
            self._counts[outcome] += 1
            if reason is not None and reason != WAITING_FOR_MODEL:
                self._last_reason = reason
                self._troubled = True
        if outcome in ("failed", "deferred") and reason not in (None, WAITING_FOR_MODEL):
            log.warning("event=extraction.%s reason=%s", outcome, reason)
