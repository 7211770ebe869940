"""``SyncPowerContextClient``: the same methods as the async client, blocking, against a real Server."""

from __future__ import annotations

import inspect

import pytest

from powercontext import PowerContextError, PrepareContextRequest, SyncPowerContextClient
from powercontext.client import PowerContextClient
from powercontext.client.sync import async_methods
from tests.conftest import LiveServer
from tests.support import unique


def test_every_async_method_has_a_sync_twin_with_the_same_signature() -> None:
    methods = async_methods()
    assert {"prepare_context", "add_memory", "search_memory", "create_topic", "get_profile", "query_code"} <= set(
        methods
    )
    # The same options; only ``transport`` is wider: the blocking client also takes a blocking transport.
    sync_options = inspect.signature(SyncPowerContextClient).parameters
    async_options = inspect.signature(PowerContextClient).parameters
    assert [(p.name, p.kind, p.default) for p in sync_options.values()] == [
        (p.name, p.kind, p.default) for p in async_options.values()
    ]
    assert "httpx.BaseTransport" in str(sync_options["transport"].annotation)
    for name in methods:
        twin = getattr(SyncPowerContextClient, name)
        assert not inspect.iscoroutinefunction(twin), name
        assert inspect.signature(twin) == inspect.signature(getattr(PowerContextClient, name)), name


def test_round_trip(server: LiveServer) -> None:
    scope_id = unique("sync")
    with SyncPowerContextClient(server.base_url) as client:
        assert client.create_scope(scope_id, "Sync").scope_id == scope_id
        memory = client.add_memory(scope_id, "Invoices are generated on the 1st", "fact")
        ref = memory.artifact_address.artifact
        hits = client.search_memory(scope_id, "invoices generated")
        assert [h.artifact_address.artifact.artifact_id for h in hits.hits] == [ref.artifact_id]
        assert client.get_memory(scope_id, ref.artifact_id, revision=1).text == "Invoices are generated on the 1st"
        prepared = client.prepare_context(PrepareContextRequest(scope_id=scope_id, query="when are invoices made?"))
        assert prepared.status == "ready" and "1st" in (prepared.content or "")
        topic = client.create_topic(scope_id, "Billing", "Monthly cycle")
        assert client.get_topic(scope_id, topic.artifact_address.artifact.artifact_id).title == "Billing"
        with pytest.raises(PowerContextError) as info:
            client.get_memory(unique("missing"), "am_x")
        assert info.value.code == "scope-not-found"
