"""The Server's code-vector fill: indexed code chunks get their vectors on a thread of their own.

Embedding code is the slow part of indexing it: a chunk is up to 120 lines, and the local model embeds ~10-20
of them a second on two cores, so indexing this repository (3,600 chunks) waited ~4 minutes for vectors when
``code index`` embedded them in the request. A Server now writes the chunks and their full-text postings in the
request and embeds them here afterwards, so ``code index`` answers in seconds and its code is found by full text
at once; a code query's vector channel ranks the chunks embedded so far, and fusion adds it to full text. Chunks
indexed while no provider was configured (or by another model) are embedded too, at start-up.

A provider failure pauses the fill for the provider's cool-down (at least a second); it then resumes where it
stopped. A store fault ends the pass, which is tried again 5 s later. Each batch is its own transaction, so a
drain or a killed process loses at most the batch in flight, which is embedded again later. ``powercontext code
index --db`` (no Server) still embeds in the indexing run.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Literal

from powercontext.inference.errors import InferenceError
from powercontext.search.backfill import MIN_RETRY_S
from powercontext.search.embedding import GuardedEmbedder
from powercontext.store.code import CodeStore

log = logging.getLogger("powercontext.inference")

State = Literal["idle", "embedding", "stopped"]
BATCH = 32
RECHECK_S = 60.0  # another process sharing the store may index code: look for a backlog this often when idle
FAULT_RETRY_S = 5.0


class CodeVectorFill:
    """Embeds chunks with no vector by ``embedder.model_id``: at ``start``, and whenever ``notify`` says code was
    indexed (``jobs.background`` job)."""

    def __init__(self, store: CodeStore, embedder: GuardedEmbedder, *, batch_size: int = BATCH) -> None:
        self._store = store
        self._embedder = embedder
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._state: State = "idle"
        self._embedded = 0
        self._left = 0  # chunks without a vector when the pass began, less those embedded since
        self._failures = 0
        self._last_failure: str | None = None
        self._pending: set[str] = set()  # Scopes indexed by this process whose chunks are not all embedded yet

    @property
    def running(self) -> bool:
        """Whether the fill's thread runs (then indexing leaves the vectors to it)."""
        thread = self._thread
        return thread is not None and thread.is_alive() and not self._stop.is_set()

    def notify(self, scope_id: str) -> None:
        """Code of ``scope_id`` was indexed: embed what it left without a vector."""
        with self._lock:
            self._pending.add(scope_id)
        self._wake.set()

    def complete(self, scope_id: str) -> bool:
        """Whether a code query of ``scope_id`` may use its vectors: not while code this process indexed there
        waits for them, since fusion would rank the chunks embedded so far above the rest (as for memories,
        ``search/backfill.py``). Chunks left without a vector by an earlier process are not tracked."""
        with self._lock:
            return scope_id not in self._pending

    def detail(self) -> dict[str, object]:
        """Content-free progress for ``/health/ready``."""
        with self._lock:
            return {
                "state": self._state if self._thread is not None else "off",
                "model": self._embedder.model_id,
                "embedded": self._embedded,
                "left": self._left,
                "scopes_waiting": len(self._pending),
                "provider_failures": self._failures,
                "last_failure": self._last_failure,
            }

    def start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="powercontext-code-vectors", daemon=True)
        self._wake.set()  # chunks indexed before this start (another model, no provider then)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop after the batch in flight and wait for the thread."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    def _set(self, state: State) -> None:
        with self._lock:
            self._state = state

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(RECHECK_S)
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                self._pass()
            except Exception as exc:  # a store fault: code stays searchable by full text; the pass is tried again
                log.error("event=code.vectors.failed reason=%s retry_in_s=%.0f", type(exc).__name__, FAULT_RETRY_S)
                self._set("idle")
                if not self._stop.wait(FAULT_RETRY_S):
                    self._wake.set()
        self._set("stopped")

    def _pass(self) -> None:
        """Embed the backlog; the Scopes waiting when it began are done once it is empty."""
        left = self._store.code_embedding_backlog_size(self._embedder.model_id)
        with self._lock:
            self._state, self._left = "embedding", left
            waiting = set(self._pending)  # a Scope indexed during this pass waits for the next one
            embedded = self._embedded
        started = time.monotonic()
        if self._fill():
            with self._lock:
                self._pending -= waiting
                self._left = 0
                embedded = self._embedded - embedded
            if embedded:
                log.info("event=code.vectors.done embedded=%d seconds=%.1f", embedded, time.monotonic() - started)
        self._set("idle")

    def _fill(self) -> bool:
        """Embed the backlog; whether it was emptied (not stopped)."""
        model_id = self._embedder.model_id
        after = 0
        while not self._stop.is_set():
            tasks = self._store.code_embedding_backlog(model_id, after, self._batch_size)
            if not tasks:
                return True
            try:
                vectors = self._embedder.embed_in_background([t.text for t in tasks])
            except InferenceError as exc:
                self._paused(exc)
                continue
            written = self._store.write_code_embeddings(model_id, list(zip(tasks, vectors, strict=True)))
            after = tasks[-1].chunk_id
            with self._lock:
                self._embedded += written
                self._left = max(0, self._left - len(tasks))
        return False

    def _paused(self, exc: InferenceError) -> None:
        with self._lock:
            self._failures += 1
            self._last_failure = exc.reason
        wait_s = max(self._embedder.cooldown_s, MIN_RETRY_S)
        log.warning("event=code.vectors.paused reason=%s retry_in_s=%.0f", exc.reason, wait_s)
        self._stop.wait(wait_s)
