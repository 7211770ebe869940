"""Streamable HTTP at ``/mcp`` on the Server, behind the same bearer-token rules as ``/v1``.

The endpoint itself requires a valid token when the Server has an access file; each tool call then
goes through the Server's own ASGI app in-process with the caller's ``Authorization`` header, so the
per-Scope grants, validation and error codes are exactly the HTTP API's.

The ``mcp`` SDK is imported and its session manager started on the first ``/mcp`` request, not when the
Server starts: the import costs ~1.2 s of CPU (its protocol types are some hundreds of pydantic models),
more than half of a Server's start, and most Servers never see an MCP client.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import httpx
from anyio.abc import TaskGroup, TaskStatus

from powercontext.mcp.bridge import INTERNAL_BASE_URL, HttpBridge
from powercontext.mcp.frames import INVALID_REQUEST, NOT_A_REQUEST, frame_problem, is_response, too_deep

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

MCP_PATH = "/mcp"


def _authorization(ctx: ServerRequestContext[Any, Any]) -> str | None:
    request = ctx.request
    headers = getattr(request, "headers", None)
    value = headers.get("authorization") if headers is not None else None
    return str(value) if value else None


async def _send_error(send: Any, status: int, code: str, message: str, request_id: str, headers: list[Any]) -> None:
    body = json.dumps({"error": {"code": code, "message": message, "request_id": request_id}}).encode("utf-8")
    start = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode("ascii")), *headers]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})


class _BearerGuard:
    """401 with the API's error envelope unless the token is known (when the Server has an access file);
    405 for anything but POST: the endpoint is stateless, so there is no stream to GET and no session to DELETE."""

    def __init__(self, app: Any, inner: Any) -> None:
        self._app = app
        self._inner = inner
        self.route: Any = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        # Name the route template for the access log, the request span and the metrics (Starlette sets it
        # only for FastAPI routes).
        scope["route"] = self.route
        request_id = str(scope.get("state", {}).get("request_id", ""))
        if scope.get("method") != "POST":
            allow = [(b"allow", b"POST")]
            await _send_error(send, 405, "method-not-allowed", "/mcp takes POST only (stateless)", request_id, allow)
            return
        table = self._app.state.access
        if table is not None:
            headers = dict(scope.get("headers") or [])
            authorization = headers.get(b"authorization", b"").decode("latin-1")
            if table.principal_for(authorization) is None:
                message = "send 'Authorization: Bearer <token>' with a token listed in the Server's access file"
                await _send_error(send, 401, "unauthenticated", message, request_id, [(b"www-authenticate", b"Bearer")])
                return
        body = await _read_body(receive)
        if body is None:
            return  # the client left
        problem = _refused_frame(body)
        if problem is not None:
            await _send_jsonrpc_error(send, problem)
            return
        await self._inner(scope, _replay(body, receive), _without_validation_dumps(send))


async def _read_body(receive: Any) -> bytes | None:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _replay(body: bytes, receive: Any) -> Any:
    """A ``receive`` that hands the SDK the body already read, then the client's own events (a disconnect)."""
    sent = False

    async def replayed() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def _refused_frame(body: bytes) -> str | None:
    """What ``powercontext mcp`` would answer ``-32600`` to (a batch, an id that is an object, ...); None for a
    frame the SDK should see (one that is not JSON, or too deep to read here, the SDK refuses itself)."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if too_deep(message) or is_response(message):
        return None
    return frame_problem(message)


async def _send_jsonrpc_error(send: Any, message: str) -> None:
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}
    body = json.dumps(error).encode("utf-8")
    start = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode("ascii"))]
    await send({"type": "http.response.start", "status": 400, "headers": start})
    await send({"type": "http.response.body", "body": body})


def _without_validation_dumps(send: Any) -> Any:
    """``send`` with the SDK's pydantic dump for a frame it cannot read (which repeats the input and links to
    pydantic's pages) replaced by a plain JSON-RPC message; every other answer passes unchanged."""
    held: dict[str, Any] = {}

    async def wrapped(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start" and message.get("status") == 400:
            held["start"] = message
            return
        if "start" not in held or message["type"] != "http.response.body":
            await send(message)
            return
        start = held.pop("start")
        if message.get("more_body"):  # a streamed answer is none of the SDK's one-piece refusals
            await send(start)
            await send(message)
            return
        body = _plain(message.get("body", b""))
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode("ascii")))
        await send({**start, "headers": headers})
        await send({**message, "body": body})

    return wrapped


def _plain(body: bytes) -> bytes:
    try:
        answer = json.loads(body)
        error = answer["error"]
        if not str(error["message"]).startswith("Validation error"):
            return body
    except (ValueError, KeyError, TypeError):
        return body
    error["message"] = f"{NOT_A_REQUEST}: its fields are not those of an MCP request, notification or response"
    error.pop("data", None)
    return json.dumps(answer).encode("utf-8")


class _OnFirstRequest:
    """The SDK's streamable-HTTP endpoint, built and started by the first request that needs it.

    ``run`` is the app's lifespan hook: it holds a task group, and the first request starts the session
    manager in a task of that group (an anyio task group must be left by the task that entered it), so the
    manager stops with the Server as before. The SDK is imported in a worker thread, keeping the event loop
    answering other requests meanwhile.
    """

    def __init__(self, app: Any) -> None:
        self._app = app
        self._endpoint: Any = None
        self._tasks: TaskGroup | None = None
        self._starting: anyio.Lock | None = None

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            self._tasks, self._starting = tasks, anyio.Lock()
            try:
                yield
            finally:
                self._tasks = None
                tasks.cancel_scope.cancel()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self._endpoint is None:
            if self._tasks is None or self._starting is None:
                raise RuntimeError("/mcp needs the Server's lifespan running")
            async with self._starting:
                if self._endpoint is None:
                    self._endpoint = await self._tasks.start(self._serve)
        await self._endpoint(scope, receive, send)

    async def _serve(self, *, task_status: TaskStatus[Any]) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPASGIApp

        manager = await anyio.to_thread.run_sync(_session_manager, self._app)
        async with manager.run():
            task_status.started(StreamableHTTPASGIApp(manager))
            await anyio.sleep_forever()


def _session_manager(app: Any) -> StreamableHTTPSessionManager:
    from mcp.server.transport_security import TransportSecuritySettings

    from powercontext.mcp.tools import build_server

    internal = httpx.ASGITransport(app=app)

    def bridge_for(ctx: ServerRequestContext[Any, Any]) -> HttpBridge:
        return HttpBridge(INTERNAL_BASE_URL, _authorization(ctx), transport=internal)

    server = build_server(bridge_for)
    # The Server's own Host/Origin guard (``server.host_guard``) covers /mcp like every other route, with the
    # operator's POWERCONTEXT_ALLOWED_HOSTS; the SDK's narrower loopback-only check would be a second rule.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    server.streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True, json_response=True, transport_security=security
    )
    return server.session_manager


def mount_mcp(app: Any) -> Callable[[], AbstractAsyncContextManager[None]]:
    """Add ``/mcp`` to the FastAPI ``app``; returns what the app's lifespan must run while serving."""
    from starlette.routing import Route

    endpoint = _OnFirstRequest(app)
    guard = _BearerGuard(app, endpoint)
    guard.route = Route(MCP_PATH, endpoint=guard)
    app.router.routes.append(guard.route)
    return endpoint.run
