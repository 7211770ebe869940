"""The Server's start-up vector backfill: load the embedding model, then embed what the store holds without a vector.

A store written while no provider was configured (or by another model) has memories the vector channel cannot see.
``memory reindex`` fills that gap by hand; a Server started with a provider does it by itself, on one thread of its
own, so start-up does not wait for the model or the backlog. Until a Scope has no memory left in the backlog,
``auto`` searches of that Scope run full text (``complete`` answers ``False``): a hybrid search over half-embedded
Scopes would rank what happens to have a vector above what does not. Scopes with nothing to embed are complete from
the start (the backlog is counted before the Server serves). Progress goes to the log and to ``/health/ready``. A
provider failure pauses the backfill for the provider's cool-down (at least a second) and it resumes where it
stopped.

Self-contained on purpose (``start``, ``stop``, ``detail``) so that an owner of the Server's background work
can run it like any other job.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Literal

from powercontext.inference.errors import InferenceError
from powercontext.search.embedding import GuardedEmbedder
from powercontext.store.base import Store

log = logging.getLogger("powercontext.inference")

State = Literal["waiting", "loading", "counting", "embedding", "done", "failed", "stopped"]
MIN_RETRY_S = 1.0
BATCH = 64
COUNT_PAGE = 1000
PROGRESS_EVERY_S = 5.0  # how often a running backfill logs its progress


class VectorBackfill:
    """Loads the provider's model and embeds the store's backlog for ``embedder.model_id``, once, in the background.

    Before ``start`` every Scope counts as complete (a Runtime used without a Server, as by ``eval``, loads the
    model on first use and embeds on write, as it always did).
    """

    def __init__(
        self,
        store: Store,
        embedder: GuardedEmbedder,
        *,
        batch_size: int = BATCH,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._batch_size = batch_size
        self._clock = clock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._state: State = "waiting"
        self._pending: dict[str, int] | None = None  # Scope -> memories still without a vector; None: not counted
        self._embedded = 0
        self._total = 0
        self._failures = 0  # provider failures so far (each one paused the backfill)
        self._last_failure: str | None = None

    # -- what the prepare path and the probes read ---------------------------------------------------------------

    def complete(self, scope_id: str) -> bool:
        """Whether ``scope_id``'s vectors are complete enough for ``auto`` to search them (see the module)."""
        with self._lock:
            if self._thread is None or self._state in ("done", "stopped") or self._pending is None:
                return True
            return scope_id not in self._pending

    def detail(self) -> dict[str, object]:
        """Content-free progress for ``/health/ready``: the state and the counts, never a Scope id."""
        with self._lock:
            incomplete = len(self._pending) if self._pending is not None else None
            return {
                "state": self._state if self._thread is not None else "off",
                "model": self._embedder.model_id,
                "embedded": self._embedded,
                "total": self._total,
                "scopes_incomplete": incomplete,
                "provider_failures": self._failures,
                "last_failure": self._last_failure,
            }

    # -- lifecycle ------------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Count the backlog per Scope now (reads only the rows without a vector), then load and embed on a thread.

        Counting first means a Scope with nothing to embed is searched in hybrid from the first request, even
        while the model is still loading (its first query waits for the load instead)."""
        with self._lock:
            if self._thread is not None:
                return
            self._state = "counting"
        pending = self._count()
        with self._lock:
            self._pending, self._total = pending, sum(pending.values())
            self._thread = threading.Thread(target=self._run, name="powercontext-vector-backfill", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Ask the thread to stop after its current batch (each batch is its own transaction) and wait for it."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the backfill has finished (done, failed or stopped); ``False`` on timeout."""
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout_s)
        return not thread.is_alive()

    # -- the work -------------------------------------------------------------------------------------------------

    def _set(self, state: State) -> None:
        with self._lock:
            self._state = state

    def _run(self) -> None:
        started = self._clock()
        try:
            self._set("loading")
            load = getattr(self._embedder.provider, "load", None)
            if callable(load):  # the local model: built here, not inside a request
                load()
            loaded_s = self._clock() - started
            log.info("event=embeddings.model.loaded model=%s seconds=%.2f", self._embedder.model_id, loaded_s)
            self._set("embedding")
            if self._total:
                log.info(
                    "event=embeddings.backfill.start model=%s missing=%d scopes=%d",
                    self._embedder.model_id,
                    self._total,
                    len(self._pending or {}),
                )
            self._embed()
        except InferenceError as exc:  # the model could not be loaded: nothing to retry
            self._set("failed")
            log.warning("event=embeddings.backfill.failed reason=%s", exc.reason)
            return
        except Exception as exc:  # never let the thread die silently; the Server keeps serving full text
            self._set("failed")
            log.error("event=embeddings.backfill.failed reason=%s", type(exc).__name__)
            return
        if self._stop.is_set():
            self._set("stopped")
            log.info("event=embeddings.backfill.stopped embedded=%d total=%d", self._embedded, self._total)
            return
        self._set("done")
        if self._total:
            log.info(
                "event=embeddings.backfill.done embedded=%d total=%d seconds=%.1f",
                self._embedded,
                self._total,
                self._clock() - started,
            )

    def _paused(self, exc: InferenceError) -> None:
        """Wait out the provider's cool-down (the breaker is open for requests too), then try the batch again."""
        with self._lock:
            self._failures += 1
            self._last_failure = exc.reason
        wait_s = max(self._embedder.cooldown_s, MIN_RETRY_S)
        log.warning(
            "event=embeddings.backfill.paused reason=%s embedded=%d total=%d retry_in_s=%.0f",
            exc.reason,
            self._embedded,
            self._total,
            wait_s,
        )
        self._stop.wait(wait_s)

    def _count(self) -> dict[str, int]:
        """Memories per Scope with no vector by the model (reads the backlog once, without embedding it)."""
        pending: dict[str, int] = {}
        after = 0
        while not self._stop.is_set():
            tasks = self._store.embedding_backlog(self._embedder.model_id, after, COUNT_PAGE)
            if not tasks:
                break
            for task in tasks:
                pending[task.key.scope_id] = pending.get(task.key.scope_id, 0) + 1
            after = tasks[-1].rowid
        return pending

    def _embed(self) -> None:
        model_id = self._embedder.model_id
        after = 0
        logged = self._clock()
        while not self._stop.is_set():
            tasks = self._store.embedding_backlog(model_id, after, self._batch_size)
            if not tasks:
                break
            try:
                vectors = self._embedder.embed_in_background([t.text for t in tasks])
            except InferenceError as exc:
                self._paused(exc)
                continue
            written = self._store.write_embeddings(model_id, [(t, vectors[i]) for i, t in enumerate(tasks)])
            after = tasks[-1].rowid
            with self._lock:
                self._embedded += written
                assert self._pending is not None
                for task in tasks:  # a task revised meanwhile was embedded by its own write: done either way
                    scope = task.key.scope_id
                    left = self._pending.get(scope, 0) - 1
                    if left > 0:
                        self._pending[scope] = left
                    else:
                        self._pending.pop(scope, None)
            if self._clock() - logged >= PROGRESS_EVERY_S:
                logged = self._clock()
                log.info("event=embeddings.backfill.progress embedded=%d total=%d", self._embedded, self._total)
        with self._lock:
            if not self._stop.is_set() and self._pending:
                self._pending.clear()  # memories added to the backlog after the count (a failed write's embedding)
