"""``SyncPowerContextClient``: the blocking twin of ``PowerContextClient``.

Every public method of the async client exists here with the same name, parameters and result; each
call runs the async method to completion on an event loop the sync client owns, on a thread of its own
(started by the first call, joined by ``close()``). So it works in scripts, in notebooks (whose cells run
inside an event loop) and from several threads at once; it blocks the calling thread while it waits, so
inside async code prefer the async client. After ``close()`` every method raises ``ClientClosed``.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

import httpx

from powercontext.client import PowerContextClient
from powercontext.client.loop_thread import LoopThread

P = ParamSpec("P")
T = TypeVar("T")


def async_methods() -> dict[str, Callable[..., Coroutine[Any, Any, Any]]]:
    """The async client's public coroutine methods (what the sync client mirrors)."""
    return {
        name: member
        for name, member in inspect.getmembers(PowerContextClient, inspect.iscoroutinefunction)
        if not name.startswith("_") and name != "aclose"
    }


def _blocking(
    method: Callable[Concatenate[PowerContextClient, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[SyncPowerContextClient, P], T]:
    """``method`` of the async client, run to completion on the sync client's loop (its own thread).

    The result keeps the async method's parameters (for type checkers, through ``P``, and for ``inspect``
    and ``help``, through ``functools.wraps``) and returns what the coroutine returns.
    """

    @functools.wraps(method)
    def call(self: SyncPowerContextClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._loop.call(lambda: method(self._client, *args, **kwargs))

    return call


class SyncPowerContextClient:
    """Blocking client. Use as ``with SyncPowerContextClient(url) as client: ...`` or call ``close()``."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
        token: str | None = None,
    ) -> None:
        """The options of ``PowerContextClient``: ``base_url`` defaults to ``POWERCONTEXT_URL`` (else
        ``http://127.0.0.1:8765``), ``token`` to ``POWERCONTEXT_TOKEN``. ``transport`` may be a blocking
        ``httpx`` transport (``httpx.MockTransport``, ``httpx.WSGITransport``, ``httpx.HTTPTransport``) or an
        async one."""
        if isinstance(transport, httpx.BaseTransport) and not isinstance(transport, httpx.AsyncBaseTransport):
            transport = _BlockingTransport(transport)
        self._client = PowerContextClient(base_url, timeout=timeout, transport=transport, token=token)
        self.base_url = self._client.base_url
        self._loop = LoopThread()
        # A client dropped without ``close()`` still ends its thread once collected (without waiting for it).
        self._collected = weakref.finalize(self, self._loop.close_soon, self._client.aclose)
        self._collected.atexit = False

    def close(self) -> None:
        """Wait for calls running in other threads, close the HTTP connections, then end the client's event loop
        and its thread. Afterwards every method raises ``ClientClosed``; a second ``close()`` does nothing."""
        self._collected.detach()
        self._loop.close(self._client.aclose)

    def __enter__(self) -> SyncPowerContextClient:
        """The client itself; ``with`` closes it at the end of the block."""
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- the async client's methods, each run to completion on this client's loop (named one by one, so a
    # user's type checker sees the real signatures; tests/unit/test_exported_members.py keeps them in step) --

    add_memories = _blocking(PowerContextClient.add_memories)
    add_memory = _blocking(PowerContextClient.add_memory)
    approve_candidate = _blocking(PowerContextClient.approve_candidate)
    approve_memory_candidate = _blocking(PowerContextClient.approve_memory_candidate)
    capabilities = _blocking(PowerContextClient.capabilities)
    capture_source = _blocking(PowerContextClient.capture_source)
    change_lifecycle = _blocking(PowerContextClient.change_lifecycle)
    change_topic_lifecycle = _blocking(PowerContextClient.change_topic_lifecycle)
    create_scope = _blocking(PowerContextClient.create_scope)
    delete_scope = _blocking(PowerContextClient.delete_scope)
    create_topic = _blocking(PowerContextClient.create_topic)
    explain_context = _blocking(PowerContextClient.explain_context)
    forget_memory = _blocking(PowerContextClient.forget_memory)
    get_candidate = _blocking(PowerContextClient.get_candidate)
    get_experience = _blocking(PowerContextClient.get_experience)
    get_memory = _blocking(PowerContextClient.get_memory)
    get_memory_candidate = _blocking(PowerContextClient.get_memory_candidate)
    get_profile = _blocking(PowerContextClient.get_profile)
    get_prompt = _blocking(PowerContextClient.get_prompt)
    get_prompt_artifact = _blocking(PowerContextClient.get_prompt_artifact)
    get_scope = _blocking(PowerContextClient.get_scope)
    get_source = _blocking(PowerContextClient.get_source)
    get_topic = _blocking(PowerContextClient.get_topic)
    index_code = _blocking(PowerContextClient.index_code)
    list_memories = _blocking(PowerContextClient.list_memories)
    list_memory_candidates = _blocking(PowerContextClient.list_memory_candidates)
    list_prompts = _blocking(PowerContextClient.list_prompts)
    list_scopes = _blocking(PowerContextClient.list_scopes)
    list_sources = _blocking(PowerContextClient.list_sources)
    merge_memories = _blocking(PowerContextClient.merge_memories)
    prepare_context = _blocking(PowerContextClient.prepare_context)
    propose_experience = _blocking(PowerContextClient.propose_experience)
    query_code = _blocking(PowerContextClient.query_code)
    read_code_evidence = _blocking(PowerContextClient.read_code_evidence)
    read_code_snippet = _blocking(PowerContextClient.read_code_snippet)
    reject_candidate = _blocking(PowerContextClient.reject_candidate)
    reject_memory_candidate = _blocking(PowerContextClient.reject_memory_candidate)
    retire_experience = _blocking(PowerContextClient.retire_experience)
    purge_memory = _blocking(PowerContextClient.purge_memory)
    purge_source = _blocking(PowerContextClient.purge_source)
    retire_memory = _blocking(PowerContextClient.retire_memory)
    retire_prompt = _blocking(PowerContextClient.retire_prompt)
    review_candidate = _blocking(PowerContextClient.review_candidate)
    revise_memory = _blocking(PowerContextClient.revise_memory)
    revise_topic = _blocking(PowerContextClient.revise_topic)
    search_experiences = _blocking(PowerContextClient.search_experiences)
    search_memory = _blocking(PowerContextClient.search_memory)
    search_topics = _blocking(PowerContextClient.search_topics)
    set_profile = _blocking(PowerContextClient.set_profile)
    set_prompt = _blocking(PowerContextClient.set_prompt)
    set_prompt_auto = _blocking(PowerContextClient.set_prompt_auto)


class _BlockingTransport(httpx.AsyncBaseTransport):
    """A blocking ``httpx`` transport seen as an async one: the sync client runs the async client's code, and
    each request is handed to ``transport`` on the client's own loop thread, one at a time (``transport`` need
    not be thread-safe; concurrent calls wait for each other)."""

    def __init__(self, transport: httpx.BaseTransport) -> None:
        self._transport = transport

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        # The extensions carry the client's timeout: without them the blocking transport would wait forever.
        blocking = httpx.Request(
            request.method, request.url, headers=request.headers, content=body, extensions=request.extensions
        )
        response = self._transport.handle_request(blocking)
        content = response.read()
        response.close()
        return httpx.Response(
            response.status_code, headers=response.headers, content=content, extensions=response.extensions
        )

    async def aclose(self) -> None:
        self._transport.close()


# A method added to the async client but not yet named above still works (untyped); the exported-members
# test names it so that it gets its typed twin.
for _name, _method in async_methods().items():
    if _name not in SyncPowerContextClient.__dict__:
        _untyped: Any = _blocking(_method)
        _untyped.__sync_untyped__ = True
        setattr(SyncPowerContextClient, _name, _untyped)
