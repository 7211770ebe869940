"""A user's script, type-checked by tests/unit/test_sdk_typing.py with ``mypy --strict --disallow-any-expr``."""

from __future__ import annotations

import asyncio

from powercontext import (
    Conflict,
    NotFound,
    PowerContextClient,
    PowerContextError,
    PrepareContextRequest,
    PreparedContext,
    SyncPowerContextClient,
)


def remember(url: str) -> int:
    with SyncPowerContextClient(url) as client:
        try:
            client.create_scope("project:payments", "Payments service")
        except Conflict as exc:
            print(exc.code)
        memory = client.add_memory("project:payments", "We chose SQLite.", "decision", tags=["storage"])
        revision: int = memory.artifact_address.artifact.revision
        hits = client.search_memory("project:payments", "SQLite", limit=3)
        texts: list[str] = [hit.text for hit in hits.hits]
        print(texts)
        return revision


async def prepare(url: str) -> PreparedContext:
    async with PowerContextClient(url) as client:
        try:
            return await client.prepare_context(
                PrepareContextRequest(scope_id="project:payments", query="Why SQLite?", max_bytes=8000)
            )
        except NotFound as exc:
            status: int = exc.status
            raise PowerContextError(status, exc.code, exc.message) from exc


def main() -> None:
    remember("http://127.0.0.1:8765")
    prepared = asyncio.run(prepare("http://127.0.0.1:8765"))
    content: str | None = prepared.content
    size: int = prepared.content_bytes
    print(content, size)


if __name__ == "__main__":
    main()
