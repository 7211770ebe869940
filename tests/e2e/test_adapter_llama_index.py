"""The LlamaIndex retriever (issue 41, item 8) against the real ``llama-index-core`` and a real Server.

A retrieval returns the prepared items as nodes, in injection order, each with the exact stored text and the
exact address of the revision it came from (Scope, family, artifact id, revision) in its metadata.
"""

from __future__ import annotations

import asyncio

from tests.conftest import LiveServer
from tests.frameworks import artifact_id, framework
from tests.support import Api

framework("llama_index.core", "llama-index-core")

from llama_index.core.retrievers import BaseRetriever  # noqa: E402

from powercontext.adapters.llama_index import PowerContextRetriever  # noqa: E402

SETTLEMENT = "The settlement batch runs nightly at 02:00 UTC"


def test_retrieve_returns_the_prepared_items_as_nodes_with_exact_addresses(server: LiveServer, api: Api) -> None:
    scope_id = api.new_scope(prefix="llama")
    created = api.add(scope_id, SETTLEMENT, kind="fact")
    api.add(scope_id, "Payroll exports are due on the 25th", kind="fact")
    retriever = PowerContextRetriever(scope_id, base_url=server.base_url)
    assert isinstance(retriever, BaseRetriever)  # usable wherever LlamaIndex takes a retriever

    nodes = retriever.retrieve("when does the settlement batch run?")

    first = nodes[0].node
    assert first.get_content() == SETTLEMENT
    ident = artifact_id(created)
    assert first.metadata["artifact_id"] == ident and first.metadata["revision"] == 1
    assert first.metadata["scope_id"] == scope_id and first.metadata["family"] == "atomic-memory"
    assert first.metadata["kind"] == "fact" and first.metadata["trust"] == "untrusted_history"
    assert first.node_id == first.metadata["powercontext_address"] == f"{scope_id}/atomic-memory/{ident}@1"
    # The address is exact: reading it back gives the same text.
    read = api.http.get(f"/v1/scopes/{scope_id}/artifacts/atomic-memory/{ident}/revisions/1")
    assert read.json()["text"] == first.get_content()


def test_aretrieve_follows_the_newest_revision(server: LiveServer, api: Api) -> None:
    scope_id = api.new_scope(prefix="llama")
    ident = artifact_id(api.add(scope_id, SETTLEMENT, kind="fact"))
    revised = api.http.put(
        f"/v1/scopes/{scope_id}/atomic-memory/{ident}",
        json={"text": "The settlement batch runs nightly at 03:00 UTC", "expected_revision": 1},
    )
    assert revised.status_code == 200, revised.text
    retriever = PowerContextRetriever(scope_id, base_url=server.base_url, max_bytes=1024)

    nodes = asyncio.run(retriever.aretrieve("settlement batch"))

    assert [n.node.metadata["revision"] for n in nodes] == [2]
    assert "03:00 UTC" in nodes[0].node.get_content()


def test_nothing_prepared_is_no_nodes(server: LiveServer, api: Api) -> None:
    scope_id = api.new_scope(prefix="llama")
    assert PowerContextRetriever(scope_id, base_url=server.base_url).retrieve("anything at all") == []
