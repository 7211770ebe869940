"""Both clients raise the error family that matches the Server's answer, against a real Server."""

from __future__ import annotations

import asyncio

import pytest

from powercontext import (
    Conflict,
    Forbidden,
    InvalidRequest,
    NotFound,
    PowerContextClient,
    PowerContextError,
    SyncPowerContextClient,
    Unavailable,
)
from tests.conftest import LiveServer
from tests.support import free_port, unique


def test_sync_client_raises_one_family_per_kind_of_failure(server: LiveServer) -> None:
    scope_id = unique("errors")
    with SyncPowerContextClient(server.base_url) as client:
        client.create_scope(scope_id, "Errors")
        with pytest.raises(Conflict) as conflict:
            client.create_scope(scope_id, "Again")
        assert (conflict.value.status, conflict.value.code) == (409, "scope-exists")
        with pytest.raises(NotFound) as missing:
            client.get_memory(scope_id, "am_missing")
        assert missing.value.status == 404 and missing.value.code == "artifact-not-found"
        with pytest.raises(InvalidRequest) as invalid:
            client.search_memory(scope_id, "anything", limit=0)
        assert invalid.value.status == 422 and invalid.value.code == "invalid-request"
        with pytest.raises(Forbidden) as refused:
            client.index_code(scope_id, "/")
        assert refused.value.status == 403
        memory = client.add_memory(scope_id, "Settlement runs nightly", "fact")
        ref = memory.artifact_address.artifact
        client.revise_memory(scope_id, ref.artifact_id, 1, "Settlement runs nightly at 02:00")
        with pytest.raises(Conflict) as stale:
            client.revise_memory(scope_id, ref.artifact_id, 1, "a stale edit")
        assert stale.value.code == "revision-conflict"
    for family in (conflict, missing, invalid, refused, stale):
        assert isinstance(family.value, PowerContextError) and family.value.message


def test_async_client_raises_not_found_and_unavailable(server: LiveServer) -> None:
    async def go() -> None:
        async with PowerContextClient(server.base_url) as client:
            with pytest.raises(NotFound) as missing:
                await client.get_scope(unique("absent"))
            assert missing.value.code == "scope-not-found"
        async with PowerContextClient(f"http://127.0.0.1:{free_port()}", timeout=5) as nobody:
            with pytest.raises(Unavailable) as down:
                await nobody.capabilities()
            assert (down.value.status, down.value.code) == (0, "server-unreachable")

    asyncio.run(go())
