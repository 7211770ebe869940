"""The RFC's guide-level snippets run verbatim against a live server, plus the async client itself."""

from __future__ import annotations

import asyncio
import hashlib
import json

import httpx

from powercontext.contract.memory import AtomicMemoryCreate
from tests.conftest import LiveServer
from tests.support import parse_fragments

GUIDE_SCOPE = "project:payments"


async def _ensure_guide_scope(client: object) -> None:
    from powercontext import PowerContextError

    try:
        await client.create_scope(GUIDE_SCOPE, "Payments")  # type: ignore[attr-defined]
    except PowerContextError as exc:
        assert exc.code == "scope-exists", exc
    await client.add_memory(  # type: ignore[attr-defined]
        GUIDE_SCOPE, "We chose SQLite because the runtime embeds its store and needs no server", "decision"
    )


def test_guide_snippets_run_verbatim(server: LiveServer) -> None:
    base_url = server.base_url

    async def main() -> None:
        from powercontext import PowerContextClient, PrepareContextRequest

        client = PowerContextClient(base_url)
        try:
            await _ensure_guide_scope(client)

            prepared = await client.prepare_context(
                PrepareContextRequest(scope_id="project:payments", query="Why did we choose SQLite?", max_bytes=8000)
            )

            assert prepared.status == "ready"
            assert prepared.receipt is None
            assert prepared.content is not None
            assert prepared.content_bytes == len(prepared.content.encode("utf-8"))
            assert set(prepared.model_dump(mode="json")) == {"schema", "status", "content", "content_bytes"}
            plain = prepared

            prepared = await client.prepare_context(
                PrepareContextRequest(
                    scope_id="project:payments",
                    query="Why did we choose SQLite?",
                    max_bytes=8000,
                    include_receipt=True,
                )
            )

            assert prepared.receipt is not None
            assert prepared.content == plain.content
            receipt = prepared.receipt
            assert receipt.content_digest == "sha256:" + hashlib.sha256(prepared.content.encode()).hexdigest()
            assert receipt.query_digest == "sha256:" + hashlib.sha256(b"Why did we choose SQLite?").hexdigest()
            assert receipt.used_bytes == prepared.content_bytes
            citations = [f.address for f in parse_fragments(prepared.content)]
            assert [s.artifact_address.model_dump(mode="json") for s in receipt.selected] == citations  # type: ignore[union-attr]
        finally:
            await client.aclose()

    asyncio.run(main())


class RecordingTransport(httpx.AsyncBaseTransport):
    """A real HTTP transport that also keeps each request body, to see exactly what the client sends."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.bodies: list[bytes] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(await request.aread())
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_default_request_sends_no_include_receipt_field(server: LiveServer) -> None:
    """Automatic host recall keeps the current request shape: the unset flag is not on the wire."""
    from powercontext import PowerContextClient, PrepareContextRequest

    transport = RecordingTransport()

    async def main() -> None:
        async with PowerContextClient(server.base_url, transport=transport) as client:
            await _ensure_guide_scope(client)
            transport.bodies.clear()
            plain = await client.prepare_context(PrepareContextRequest(scope_id=GUIDE_SCOPE, query="SQLite"))
            assert plain.receipt is None
            await client.prepare_context(PrepareContextRequest(scope_id=GUIDE_SCOPE, query="SQLite", max_bytes=9000))
            explained = await client.prepare_context(
                PrepareContextRequest(scope_id=GUIDE_SCOPE, query="SQLite", include_receipt=True)
            )
            assert explained.receipt is not None

    asyncio.run(main())
    sent = [json.loads(b) for b in transport.bodies]
    assert sent == [
        {"scope_id": GUIDE_SCOPE, "query": "SQLite"},
        {"scope_id": GUIDE_SCOPE, "query": "SQLite", "max_bytes": 9000},
        {"scope_id": GUIDE_SCOPE, "query": "SQLite", "include_receipt": True},
    ]


def test_client_memory_round_trip_and_errors(server: LiveServer) -> None:
    async def main() -> None:
        from powercontext import PowerContextClient, PowerContextError

        async with PowerContextClient(server.base_url) as client:
            import uuid

            sid = f"client-{uuid.uuid4().hex}"
            scope = await client.create_scope(sid, "Client")
            assert scope.scope_id == sid and sid in [s.scope_id for s in await client.list_scopes()]
            m = await client.add_memory(sid, "clientword deploy decision", "decision", ["t"], "idem-1")
            again = await client.add_memory(sid, "clientword deploy decision", "decision", ["t"], "idem-1")
            assert again.artifact_address == m.artifact_address
            batch = await client.add_memories(
                sid, [AtomicMemoryCreate(text=f"clientword batch {i}", kind="fact") for i in range(3)]
            )
            assert len(batch) == 3
            aid = m.artifact_address.artifact.artifact_id
            revised = await client.revise_memory(sid, aid, 1, "clientword deployment revised")
            assert revised.artifact_address.artifact.revision == 2
            old = await client.get_memory(sid, aid, revision=1)
            assert old.text == "clientword deploy decision" and old.head_revision == 2
            result = await client.search_memory(sid, "deployment")
            assert result.mode == "fts" and [h.artifact_address for h in result.hits] == [revised.artifact_address]
            forgotten = await client.forget_memory(sid, aid)
            assert forgotten.state == "forgotten"
            merged = await client.merge_memories(
                sid, [(b.artifact_address.artifact.artifact_id, 1) for b in batch[:2]], "clientword merged", "fact"
            )
            assert [a.artifact.artifact_id for a in merged.merged_from] == [
                b.artifact_address.artifact.artifact_id for b in batch[:2]
            ]
            retired = await client.retire_memory(sid, batch[2].artifact_address.artifact.artifact_id)
            assert retired.state == "retired"
            caps = await client.capabilities()
            assert "powercontext.prepared-context-receipt.v1" in caps.receipt_policies

            try:
                await client.get_scope("client-missing-scope")
            except PowerContextError as exc:
                assert (exc.status, exc.code) == (404, "scope-not-found") and exc.request_id
            else:
                raise AssertionError("expected scope-not-found")
            try:
                await client.search_memory(sid, "x", mode="vector")
            except PowerContextError as exc:
                assert (exc.status, exc.code) == (409, "mode-unavailable")
            else:
                raise AssertionError("expected mode-unavailable")

    asyncio.run(main())


def test_client_reports_unreachable_server() -> None:
    from tests.support import free_port

    async def main() -> None:
        from powercontext import PowerContextClient, PowerContextError, PrepareContextRequest

        async with PowerContextClient(f"http://127.0.0.1:{free_port()}", timeout=2) as client:
            try:
                await client.prepare_context(PrepareContextRequest(scope_id="s", query="q"))
            except PowerContextError as exc:
                assert (exc.status, exc.code) == (0, "server-unreachable")
            else:
                raise AssertionError("expected server-unreachable")

    asyncio.run(main())
