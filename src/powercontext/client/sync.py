"""``SyncPowerContextClient``: the blocking twin of ``PowerContextClient``.

Every public method of the async client exists here with the same name, parameters and result; each
call runs the async method to completion on an event loop the sync client owns. Use it where no event
loop is running (scripts, notebooks' plain cells excepted, threads); inside async code use the async
client.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, TypeVar

import httpx

from powercontext.client import DEFAULT_BASE_URL, PowerContextClient

T = TypeVar("T")


def async_methods() -> dict[str, Callable[..., Coroutine[Any, Any, Any]]]:
    """The async client's public coroutine methods (what the sync client mirrors)."""
    return {
        name: member
        for name, member in inspect.getmembers(PowerContextClient, inspect.iscoroutinefunction)
        if not name.startswith("_") and name != "aclose"
    }


class SyncPowerContextClient:
    """Blocking client. Use as ``with SyncPowerContextClient(url) as client: ...`` or call ``close()``."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        token: str | None = None,
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._client = PowerContextClient(base_url, timeout=timeout, transport=transport, token=token)
        self.base_url = self._client.base_url

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(coroutine)

    def close(self) -> None:
        if not self._loop.is_closed():
            self._run(self._client.aclose())
            self._loop.close()

    def __enter__(self) -> SyncPowerContextClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        # Only reached for names not defined above: the mirrored methods are set on the class below.
        raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")


def _mirror(name: str, method: Callable[..., Coroutine[Any, Any, Any]]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: SyncPowerContextClient, *args: Any, **kwargs: Any) -> Any:
        return self._run(getattr(self._client, name)(*args, **kwargs))

    return call


for _name, _method in async_methods().items():
    setattr(SyncPowerContextClient, _name, _mirror(_name, _method))
