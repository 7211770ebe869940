"""``PowerContextClient``: the async HTTP client (httpx) for the PowerContext Server."""

from __future__ import annotations

import os
import ssl
import urllib.request
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
from pydantic import BaseModel

from powercontext.client.checks import checked_input
from powercontext.client.errors import ClientClosed, PowerContextError, error_from_answer, unreachable
from powercontext.client.errors import Conflict as Conflict
from powercontext.client.errors import Forbidden as Forbidden
from powercontext.client.errors import InvalidRequest as InvalidRequest
from powercontext.client.errors import NotFound as NotFound
from powercontext.client.errors import Unavailable as Unavailable
from powercontext.client.families import FamilyClientMixin
from powercontext.client.prompts import PromptClientMixin
from powercontext.client.sources import SourceClientMixin
from powercontext.server_url import DEFAULT_URL, check_server_url
from powercontext.server_url import BadServerUrl as BadServerUrl
from powercontext.text.urls import mask_credentials

if TYPE_CHECKING:
    from powercontext.contract.capabilities import Capabilities
    from powercontext.contract.code import CodeIndexResult, CodeQueryResult, CodeSnippetResult
    from powercontext.contract.common import CodeEvidenceRef, MemoryKind, SearchModePolicy
    from powercontext.contract.explain import ContextExplanation, ExplainContextRequest
    from powercontext.contract.memory import (
        AtomicMemory,
        AtomicMemoryBatchItem,
        AtomicMemoryCreate,
        AtomicMemoryCreated,
        AtomicMemoryList,
        AtomicMemorySearchResult,
        MemoryListState,
        PurgedArtifactView,
    )
    from powercontext.contract.prepare import PrepareContextRequest as PrepareContextRequest
    from powercontext.contract.prepare import PreparedContext as PreparedContext
    from powercontext.contract.scopes import Scope, ScopeDeleted


# The package's public names are ``powercontext.__all__``. The names this module exported before that list
# moved stay importable from here (the ``X as X`` imports above re-export them).
__all__ = ["PowerContextClient", "PowerContextError"]

DEFAULT_BASE_URL = DEFAULT_URL
_LAZY_EXPORTS = frozenset({"PrepareContextRequest", "PreparedContext"})


def __getattr__(name: str) -> Any:
    """``PrepareContextRequest`` and ``PreparedContext``, still importable from here, load on first use: the
    wire models are imported by the methods that send or read them, so a command pays only for its own."""
    if name in _LAZY_EXPORTS:
        from powercontext.contract import prepare

        return getattr(prepare, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


M = TypeVar("M", bound=BaseModel)


def _tls_verification(base_url: str) -> ssl.SSLContext | bool:
    """``True`` (the CA bundle) for an ``https`` Server or when a proxy is configured; for a plain ``http``
    Server a TLS context that trusts no certificate: no TLS is spoken there, and loading the CA bundle costs a
    command-line call ~20 ms. Any TLS attempt with it fails verification rather than passing unchecked."""
    if not base_url.startswith("http://") or any(urllib.request.getproxies().values()):
        return True
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # check_hostname and CERT_REQUIRED, no CA: nothing verifies


class PowerContextClient(FamilyClientMixin, PromptClientMixin, SourceClientMixin):
    """Async client. Use as ``async with PowerContextClient(url) as client: ...`` or call ``aclose()``.

    Topic Memory, Experience and Profile methods come from ``FamilyClientMixin``; Prompts from
    ``PromptClientMixin``; Sources and the review inbox from ``SourceClientMixin``.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        token: str | None = None,
    ) -> None:
        """``base_url``: the Server, e.g. ``http://127.0.0.1:8765`` (without ``/v1``); default
        ``POWERCONTEXT_URL``, else ``http://127.0.0.1:8765``, as the CLI. ``token``: the bearer token, for a
        Server that runs with an access file; default ``POWERCONTEXT_TOKEN``. A malformed URL raises
        ``BadServerUrl`` (a ``ValueError``) saying what is wrong with it."""
        self.base_url = check_server_url(base_url or os.environ.get("POWERCONTEXT_URL", "").strip() or DEFAULT_BASE_URL)
        token = token if token is not None else (os.environ.get("POWERCONTEXT_TOKEN", "").strip() or None)
        headers = {"Authorization": f"Bearer {token}"} if token else None
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            timeout=timeout,
            transport=transport,
            headers=headers,
            verify=_tls_verification(self.base_url),
        )

    async def __aenter__(self) -> PowerContextClient:
        """The client itself; ``async with`` closes it at the end of the block."""
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP connections; afterwards every method raises ``ClientClosed``."""
        await self._http.aclose()

    async def _call(
        self,
        method: str,
        path: str,
        model: type[M],
        json: Any = None,
        params: dict[str, str | int] | None = None,
        timeout: float | None = None,
    ) -> M:
        extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        if self._http.is_closed:
            raise ClientClosed()
        try:
            response = await self._http.request(method, path, json=json, params=params, **extra)
        except httpx.TransportError as exc:
            raise unreachable(mask_credentials(self.base_url), type(exc).__name__) from exc
        if response.status_code >= 400:
            raise error_from_answer(
                response.status_code, response.content, response.request.url.path, mask_credentials(self.base_url)
            )
        return model.model_validate_json(response.content)

    # -- context ---------------------------------------------------------------------------------

    async def prepare_context(self, request: PrepareContextRequest) -> PreparedContext:
        """Prepare one injection-ready context. Unset optional fields are not sent."""
        from powercontext.contract.prepare import PreparedContext

        return await self._call("POST", "/v1/context/prepare", PreparedContext, request.to_wire())

    async def explain_context(self, request: ExplainContextRequest) -> ContextExplanation:
        """Why each candidate of one prepare was selected or omitted (diagnostic; not for injection)."""
        from powercontext.contract.explain import ContextExplanation

        return await self._call("POST", "/v1/context/explain", ContextExplanation, request.to_wire())

    async def capabilities(self) -> Capabilities:
        """What this Server offers: families, search modes, providers and each route's body limit."""
        from powercontext.contract.capabilities import Capabilities

        return await self._call("GET", "/v1/capabilities", Capabilities)

    # -- scopes ----------------------------------------------------------------------------------

    async def create_scope(self, scope_id: str, title: str, context_references: Sequence[str] = ()) -> Scope:
        """Create a Scope (``Conflict`` ``scope-exists`` if it does); ``context_references`` are Scopes whose
        memories prepare also reads."""
        from powercontext.contract.scopes import Scope

        body = {"scope_id": scope_id, "title": title, "context_references": list(context_references)}
        return await self._call("POST", "/v1/scopes", Scope, body)

    async def list_scopes(self) -> list[Scope]:
        """Every Scope this caller may read."""
        from powercontext.contract.scopes import ScopeList

        return (await self._call("GET", "/v1/scopes", ScopeList)).items

    async def get_scope(self, scope_id: str) -> Scope:
        """One Scope (``NotFound`` ``scope-not-found`` if it does not exist; ``Forbidden`` ``scope-forbidden`` if
        the token may not read it)."""
        from powercontext.contract.scopes import Scope

        return await self._call("GET", f"/v1/scopes/{_seg(scope_id)}", Scope)

    async def delete_scope(self, scope_id: str) -> ScopeDeleted:
        """Delete a Scope and everything in it, for good (needs the ``delete`` grant); irreversible."""
        from powercontext.contract.scopes import ScopeDeleted

        return await self._call("DELETE", f"/v1/scopes/{_seg(scope_id)}", ScopeDeleted, {"confirm": scope_id})

    # -- atomic memory ---------------------------------------------------------------------------

    async def add_memory(
        self,
        scope_id: str,
        text: str,
        kind: MemoryKind,
        tags: Sequence[str] = (),
        idempotency_key: str | None = None,
        observed_at: str | None = None,
    ) -> AtomicMemoryCreated:
        """Create one memory. ``observed_at`` (RFC 3339) is when it was true, if not now; the answer's
        ``possibly_supersedes`` lists earlier memories on the same subject it may replace (nothing is retired)."""
        from powercontext.contract.memory import AtomicMemoryCreate, AtomicMemoryCreated

        with checked_input():
            item = AtomicMemoryCreate(
                text=text, kind=kind, tags=list(tags), idempotency_key=idempotency_key, observed_at=observed_at
            )
        return await self._call("POST", f"{_mem(scope_id)}", AtomicMemoryCreated, _wire(item))

    async def add_memories(self, scope_id: str, items: Sequence[AtomicMemoryCreate]) -> list[AtomicMemoryBatchItem]:
        """Create up to 500 memories in one transaction (all or nothing); ``replayed`` marks items whose
        idempotency_key was already stored with the same body (nothing new was written for them)."""
        from powercontext.contract.memory import AtomicMemoryBatch

        body = {"items": [_wire(i) for i in items]}
        return (await self._call("POST", f"{_mem(scope_id)}/batch", AtomicMemoryBatch, body)).items

    async def search_memory(
        self, scope_id: str, query: str, mode: SearchModePolicy = "auto", limit: int = 10
    ) -> AtomicMemorySearchResult:
        """Search the active heads of a Scope's Atomic Memory; ``mode`` ``auto`` picks hybrid or vector search
        when an embedding provider is configured, else full-text (``fts``)."""
        from powercontext.contract.memory import AtomicMemorySearchResult

        body = {"query": query, "mode": mode, "limit": limit}
        return await self._call("POST", f"{_mem(scope_id)}/search", AtomicMemorySearchResult, body)

    async def list_memories(
        self, scope_id: str, limit: int = 50, cursor: str | None = None, state: MemoryListState = "active"
    ) -> AtomicMemoryList:
        """One page of heads, newest first; pass the answer's ``next_cursor`` as ``cursor`` for the next.
        ``state``: active (default), forgotten, retired, merged or all."""
        from powercontext.contract.memory import AtomicMemoryList

        params: dict[str, str | int] = {"limit": limit, "state": state}
        if cursor is not None:
            params["cursor"] = cursor
        return await self._call("GET", _mem(scope_id), AtomicMemoryList, params=params)

    async def revise_memory(
        self,
        scope_id: str,
        artifact_id: str,
        expected_revision: int,
        text: str,
        kind: MemoryKind | None = None,
        tags: Sequence[str] | None = None,
    ) -> AtomicMemory:
        """Write a new revision over head ``expected_revision`` (``Conflict`` ``revision-conflict`` if the head
        moved); ``kind`` and ``tags`` left as None keep the current ones."""
        from powercontext.contract.memory import AtomicMemory

        body: dict[str, Any] = {"text": text, "expected_revision": expected_revision}
        if kind is not None:
            body["kind"] = kind
        if tags is not None:
            body["tags"] = list(tags)
        return await self._call("PUT", f"{_mem(scope_id)}/{_seg(artifact_id)}", AtomicMemory, body)

    async def change_lifecycle(
        self, scope_id: str, artifact_id: str, action: str, expected_revision: int | None = None
    ) -> AtomicMemory:
        """Apply ``action`` (``forget``, ``retire`` or ``restore``); with ``expected_revision`` only if the head
        is still that revision. Every revision stays readable exactly."""
        from powercontext.contract.memory import AtomicMemory

        body: dict[str, Any] = {"action": action}
        if expected_revision is not None:
            body["expected_revision"] = expected_revision
        return await self._call("POST", f"{_mem(scope_id)}/{_seg(artifact_id)}/lifecycle", AtomicMemory, body)

    async def forget_memory(self, scope_id: str, artifact_id: str) -> AtomicMemory:
        """Forget a memory: prepare and search no longer return it (``change_lifecycle(..., "forget")``)."""
        return await self.change_lifecycle(scope_id, artifact_id, "forget")

    async def purge_memory(self, scope_id: str, artifact_id: str) -> PurgedArtifactView:
        """Erase every revision of a memory for good (exact reads then fail with ``purged``, 410); irreversible."""
        from powercontext.contract.memory import PurgedArtifactView

        return await self._call("POST", f"{_mem(scope_id)}/{_seg(artifact_id)}/purge", PurgedArtifactView)

    async def retire_memory(self, scope_id: str, artifact_id: str) -> AtomicMemory:
        """Retire an outdated memory (``change_lifecycle(..., "retire")``)."""
        return await self.change_lifecycle(scope_id, artifact_id, "retire")

    async def merge_memories(
        self,
        scope_id: str,
        sources: Sequence[tuple[str, int]],
        text: str,
        kind: MemoryKind,
        tags: Sequence[str] = (),
    ) -> AtomicMemory:
        """Merge exact revisions (``sources``: ``(artifact_id, revision)`` pairs) into one new memory; the
        sources become ``merged`` and point at it."""
        from powercontext.contract.memory import AtomicMemory

        body = {
            "sources": [{"artifact_id": a, "revision": r} for a, r in sources],
            "text": text,
            "kind": kind,
            "tags": list(tags),
        }
        return await self._call("POST", f"{_mem(scope_id)}/merges", AtomicMemory, body)

    async def get_memory(self, scope_id: str, artifact_id: str, revision: int | None = None) -> AtomicMemory:
        """The head, or with ``revision`` that exact immutable revision."""
        from powercontext.contract.memory import AtomicMemory

        path = f"/v1/scopes/{_seg(scope_id)}/artifacts/atomic-memory/{_seg(artifact_id)}"
        if revision is not None:
            path += f"/revisions/{revision}"
        return await self._call("GET", path, AtomicMemory)

    # -- code evidence -------------------------------------------------------------------------

    async def index_code(
        self, scope_id: str, path: str, max_file_bytes: int | None = None, timeout: float = 600.0
    ) -> CodeIndexResult:
        """Register or re-index a work tree. ``path`` is on the Server's file system (relative paths resolve
        against the Server's working directory), so pass an absolute path when the Server runs elsewhere."""
        from powercontext.contract.code import CodeIndexResult

        body: dict[str, Any] = {"path": path}
        if max_file_bytes is not None:
            body["max_file_bytes"] = max_file_bytes
        return await self._call("POST", f"{_code(scope_id)}/index", CodeIndexResult, body, timeout=timeout)

    async def query_code(self, scope_id: str, query: str, limit: int = 10) -> CodeQueryResult:
        """Search every indexed work tree of the Scope; hits carry their exact ``CodeEvidenceRef``."""
        from powercontext.contract.code import CodeQueryResult

        body = {"query": query, "limit": limit}
        return await self._call("POST", f"{_code(scope_id)}/query", CodeQueryResult, body)

    async def read_code_snippet(
        self, scope_id: str, fingerprint: str, path: str, file_sha256: str, start_line: int, end_line: int
    ) -> CodeSnippetResult:
        """The exact lines, if the file still has ``file_sha256`` (else ``PowerContextError`` ``code-changed``)."""
        from powercontext.contract.code import CodeSnippetResult

        params: dict[str, str | int] = {
            "fingerprint": fingerprint,
            "path": path,
            "file_sha256": file_sha256,
            "start_line": start_line,
            "end_line": end_line,
        }
        return await self._call("GET", f"{_code(scope_id)}/snippet", CodeSnippetResult, params=params)

    async def read_code_evidence(self, evidence: CodeEvidenceRef) -> CodeSnippetResult:
        """Re-read a cited range (e.g. a Receipt's ``code_evidence``) for progressive inspection."""
        return await self.read_code_snippet(
            evidence.scope_id,
            evidence.fingerprint,
            evidence.path,
            evidence.file_sha256,
            evidence.start_line,
            evidence.end_line,
        )


def _seg(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe=":@+=~.-_")


def _mem(scope_id: str) -> str:
    return f"/v1/scopes/{_seg(scope_id)}/atomic-memory"


def _code(scope_id: str) -> str:
    return f"/v1/scopes/{_seg(scope_id)}/code"


def _wire(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_none=True)
