"""The readiness check, kept off the request thread pool so probes never queue behind request work."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

READY_TIMEOUT_S = 1.0


class ReadinessProbe:
    """Runs ``check`` (the store's ``ready``) on one thread of its own and gives up after ``timeout_s``.

    Starlette runs sync routes on a shared pool of 40 threads; when every one of them is busy (a stalled
    provider, a slow store) a probe routed there would wait its turn. This probe needs only the event loop
    and its own thread. A check that hangs (a store stuck on a lock) makes this and the following probes
    answer "not ready" after ``timeout_s`` instead of hanging with it.
    """

    def __init__(self, check: Callable[[], bool], timeout_s: float = READY_TIMEOUT_S) -> None:
        self._check = check
        self._timeout_s = timeout_s
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="powercontext-ready")

    async def ready(self) -> bool:
        loop = asyncio.get_running_loop()
        try:
            return await asyncio.wait_for(loop.run_in_executor(self._executor, self._safe_check), self._timeout_s)
        except TimeoutError:
            return False

    def _safe_check(self) -> bool:
        try:
            return self._check()
        except Exception:  # a probe answers a status, never a 500
            return False

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
