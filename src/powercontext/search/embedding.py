"""The embedding provider as search and writes use it: behind a breaker, failures mapped, content-free logs."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from powercontext import observe
from powercontext.inference.base import EmbeddingProvider
from powercontext.inference.deadline import MIN_CALL_S, abandon_when, active_deadline
from powercontext.inference.errors import InferenceError
from powercontext.store.base import Embedding

log = logging.getLogger("powercontext.inference")

FallbackReason = Literal["none", "inference_unavailable", "inference_timeout", "reused_fts_fallback"]
InferenceReason = Literal["inference_unavailable", "inference_timeout"]

# A background job (the vector backfills) embeds with a model computed in this process in slices of this many
# texts, each after the foreground calls (a prepare's query, a write) in flight: a query then waits for one slice
# instead of the job's whole batch. Measured during the code-vector fill after ``code index`` of this repository
# (local model, idle machine, 30 prepares): p50 / p90 192 / 356 ms unsliced, 185 / 270 ms in slices of four (a
# slice of four 128-token chunks is ~11 GFLOP, 0.1-0.2 s), 44 / 65 ms one text at a time, with the fill's pace
# unchanged (352 chunks embedded in each run's same span).
BACKGROUND_SLICE: Final = 1
# How long after a foreground call a slice still waits (the rest of that prepare runs on the same cores), and the
# longest it waits at all, so a steady stream of prepares slows a job but cannot stop it.
FOREGROUND_GRACE_S: Final = 0.05
MAX_YIELD_S: Final = 1.0


class GuardedEmbedder:
    """The configured provider behind a breaker.

    After a failure the provider is not called again for ``cooldown_s`` seconds: a dead or stalled
    provider then costs one timeout per cool-down, not one per search. While the breaker is open,
    ``auto`` searches run fts and report the failure class that opened it.

    Concurrent callers also learn about a stall before it ends: every call is registered with the
    moment its provider deadline passes (``call_budget_s``), and while any call is still outstanding
    past that moment the provider counts as timing out, so new ``auto`` searches and writes do not
    join the wait. Calls already waiting stop too: once another call has timed out or outlived its
    deadline since a call started, that call gives up (``inference_timeout``) instead of waiting out
    its own deadline.
    """

    def __init__(
        self, provider: EmbeddingProvider, cooldown_s: float = 30.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.provider = provider
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._lock = threading.Lock()
        self._open: tuple[float, InferenceReason] | None = None
        self._overdue_at: dict[int, float] = {}  # outstanding call -> when it has outlived its deadline
        self._calls = itertools.count()
        self._timeouts = 0  # calls that have failed with inference_timeout so far
        self._foreground = 0  # foreground calls in flight
        self._foreground_done = threading.Condition(self._lock)
        self._last_foreground = -float("inf")  # when the last foreground call ended (time.monotonic)

    @property
    def configured(self) -> bool:
        return self.provider.configured

    @property
    def model_id(self) -> str:
        return self.provider.model_id

    def open_reason(self) -> InferenceReason | None:
        """Why the provider should be left alone now, or ``None`` to call it.

        The failure class of a recent failure during its cool-down, or ``inference_timeout`` while a
        call is outstanding past its deadline.
        """
        with self._lock:
            now = self._clock()
            if self._open is not None:
                until, reason = self._open
                if now < until:
                    return reason
                self._open = None
            if any(now >= overdue for overdue in self._overdue_at.values()):
                return "inference_timeout"
            return None

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed now, whatever the breaker says (explicit requests); a failure opens the breaker. A foreground
        call: background jobs (``embed_in_background``) let it go first."""
        with self._lock:
            self._foreground += 1
        try:
            return self._embed(texts)
        finally:
            with self._lock:
                self._foreground -= 1
                self._last_foreground = time.monotonic()  # real time: the breaker's clock may be a test's
                self._foreground_done.notify_all()

    def embed_in_background(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """``embed`` for a background job. With a model computed in this process (no provider deadline), in
        slices of ``BACKGROUND_SLICE`` texts, each started once no foreground call is in flight or has just
        ended (waiting at most ``MAX_YIELD_S``); a remote provider gets the whole batch in one call."""
        if self.provider.call_budget_s(len(texts)) is not None or len(texts) <= BACKGROUND_SLICE:
            self._yield_to_foreground()
            return self._embed(texts)
        parts = []
        for start in range(0, len(texts), BACKGROUND_SLICE):
            self._yield_to_foreground()
            parts.append(self._embed(texts[start : start + BACKGROUND_SLICE]))
        return np.concatenate(parts)

    def _yield_to_foreground(self) -> None:
        give_up = time.monotonic() + MAX_YIELD_S
        with self._lock:
            while True:
                quiet_for = time.monotonic() - self._last_foreground
                if self._foreground == 0 and quiet_for >= FOREGROUND_GRACE_S:
                    return
                left = give_up - time.monotonic()
                if left <= 0:
                    return
                self._foreground_done.wait(min(left, max(FOREGROUND_GRACE_S - quiet_for, 0.005)))

    def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        budget = self.provider.call_budget_s(len(texts))
        # A caller's deadline (a prepare's) that ends before the provider's own: a timeout then says nothing
        # about the provider, so it does not open the breaker.
        outer = active_deadline()
        cut_by_caller = budget is not None and outer is not None and outer.remaining() < budget
        call = next(self._calls)
        with self._lock:
            timeouts_before = self._timeouts
            if budget is not None:
                self._overdue_at[call] = self._clock() + budget

        def stalled_elsewhere() -> bool:
            with self._lock:
                if self._timeouts != timeouts_before:
                    return True
                now = self._clock()
                return any(now >= overdue for other, overdue in self._overdue_at.items() if other != call)

        try:
            with abandon_when(stalled_elsewhere):
                vectors = self.provider.embed(texts)
        except InferenceError as exc:
            observe.note_provider_call(exc.reason)
            if cut_by_caller and exc.reason == "inference_timeout":
                log.warning("event=inference.embed.failed reason=deadline provider=%s", self.provider.name)
                raise
            with self._lock:
                self._open = (self._clock() + self.cooldown_s, exc.reason)
                if exc.reason == "inference_timeout":
                    self._timeouts += 1
            log.warning("event=inference.embed.failed reason=%s provider=%s", exc.reason, self.provider.name)
            raise
        else:
            observe.note_provider_call("ok")
            with self._lock:
                self._open = None
            return vectors
        finally:
            with self._lock:
                self._overdue_at.pop(call, None)

    def embed_for_write(self, texts: Sequence[str]) -> list[Embedding | None]:
        """Embeddings to store with new revisions, or ``None`` each when none can be made now.

        A write never fails because of the provider: the memory is stored without its vector (it is
        still found by fts) and ``powercontext memory reindex`` fills the gap later.
        """
        if not self.configured or not texts or self.open_reason() is not None:
            return [None] * len(texts)
        try:
            vectors = self.embed(texts)
        except InferenceError:
            return [None] * len(texts)
        return [Embedding(self.model_id, vectors[i]) for i in range(len(texts))]


@dataclass
class VectorChannel:
    """One prepare's view of the vector channel, so rounds can reuse an earlier round's failure.

    Each Scope's search embeds the query with its own call (so one Scope can complete ``hybrid`` while
    another falls back after a timeout, as in the RFC's example); the families searched in one Scope
    share that Scope's vector. After a failure no search of this prepare calls the provider again:
    the rest of that round reports the observed class, later rounds ``reused_fts_fallback``.
    """

    embedder: GuardedEmbedder
    failure: tuple[int, InferenceReason] | None = None
    _vectors: dict[tuple[str, str], npt.NDArray[np.float32]] = field(default_factory=dict)

    def will_compute(self, scope_id: str, text: str) -> bool:
        """Whether ``query_vector`` would compute the vector on this machine now (an in-process model, nothing
        known yet), rather than answer at once or wait on a remote provider."""
        provider = self.embedder.provider
        # No call deadline is the protocol's mark of local computation.
        local = provider.configured and provider.call_budget_s(1) is None
        return local and self.failure is None and (scope_id, text) not in self._vectors

    def query_vector(self, round: int, text: str, scope_id: str = "") -> npt.NDArray[np.float32] | FallbackReason:
        """The query's embedding for a search in ``scope_id``, or the reason the vector channel is dropped."""
        if not self.embedder.configured:
            return "none"
        known = self._vectors.get((scope_id, text))
        if known is not None:
            return known
        if self.failure is not None:
            failed_round, reason = self.failure
            return "reused_fts_fallback" if round > failed_round else reason
        open_reason = self.embedder.open_reason()
        if open_reason is not None:
            return open_reason
        deadline = active_deadline()
        if deadline is not None and deadline.remaining() < MIN_CALL_S:
            # The prepare's deadline leaves no time for the call: skipped, as a timeout would have ended it.
            self.failure = (round, "inference_timeout")
            return "inference_timeout"
        try:
            vector: npt.NDArray[np.float32] = self.embedder.embed([text])[0]
        except InferenceError as exc:
            self.failure = (round, exc.reason)
            return exc.reason
        self._vectors[(scope_id, text)] = vector
        return vector
