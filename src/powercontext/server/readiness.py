"""The readiness check, kept off the request thread pool so probes never queue behind request work."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from powercontext.store.health import StoreProblem

READY_TIMEOUT_S = 1.0
UNANSWERED = StoreProblem(
    "store-unavailable", "the store did not answer the readiness check within 1 s; it may be busy or stuck"
)
UNREADABLE = StoreProblem("store-unavailable", "the store did not answer a read; see the Server's log")


def store_readiness(store: Any) -> Callable[[], StoreProblem | None]:
    """The check for ``store``: whatever its ``readiness_problem`` reports (can it write, is it whole:
    ``store.health``), then whether it answers a read (``ready``). A store without that method is judged by its
    read alone. The known problem comes first: it is cheap and names the cause, where a read on a store in
    trouble (an embedded engine whose log a full disk stopped) may not answer within the probe's second."""

    def check() -> StoreProblem | None:
        problem_of = getattr(store, "readiness_problem", None)
        problem = problem_of() if callable(problem_of) else None
        if isinstance(problem, StoreProblem):
            return problem
        return None if store.ready() else UNREADABLE

    return check


class ReadinessProbe:
    """Runs ``check`` (``store_readiness``) on one thread of its own and gives up after ``timeout_s``.

    Starlette runs sync routes on a shared pool of 40 threads; when every one of them is busy (a stalled
    provider, a slow store) a probe routed there would wait its turn. This probe needs only the event loop
    and its own thread. A check that hangs (a store stuck on a lock) makes this and the following probes
    answer "not ready" after ``timeout_s`` instead of hanging with it.
    """

    def __init__(self, check: Callable[[], StoreProblem | None], timeout_s: float = READY_TIMEOUT_S) -> None:
        self._check = check
        self._timeout_s = timeout_s
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="powercontext-ready")

    async def problem(self) -> StoreProblem | None:
        """None when ready; else why not."""
        loop = asyncio.get_running_loop()
        try:
            return await asyncio.wait_for(loop.run_in_executor(self._executor, self._safe_check), self._timeout_s)
        except TimeoutError:
            return UNANSWERED

    async def ready(self) -> bool:
        return await self.problem() is None

    def _safe_check(self) -> StoreProblem | None:
        try:
            return self._check()
        except Exception:  # a probe answers a status, never a 500
            return UNREADABLE

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
