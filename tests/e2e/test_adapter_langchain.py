"""The LangChain retriever (issue 41, item 8) against the real ``langchain-core`` and a real Server: the prepared
items come back as ``Document``s, in injection order, with the exact stored text and exact address."""

from __future__ import annotations

import asyncio

from tests.conftest import LiveServer
from tests.frameworks import artifact_id, framework
from tests.support import Api

framework("langchain_core", "langchain-core")

from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.runnables import RunnableLambda  # noqa: E402

from powercontext.adapters.langchain import PowerContextRetriever  # noqa: E402

SETTLEMENT = "The settlement batch runs nightly at 02:00 UTC"


def test_invoke_returns_documents_with_exact_addresses(server: LiveServer, api: Api) -> None:
    scope_id = api.new_scope(prefix="langchain")
    ident = artifact_id(api.add(scope_id, SETTLEMENT, kind="fact"))
    retriever = PowerContextRetriever(scope_id=scope_id, base_url=server.base_url, token="s3cret-token")
    assert isinstance(retriever, BaseRetriever)
    assert "s3cret-token" not in repr(retriever) and "token" not in retriever.model_dump()

    [document] = retriever.invoke("when does the settlement batch run?")

    assert document.page_content == SETTLEMENT
    assert document.id == document.metadata["powercontext_address"] == f"{scope_id}/atomic-memory/{ident}@1"
    assert document.metadata["artifact_id"] == ident and document.metadata["revision"] == 1
    assert document.metadata["kind"] == "fact" and document.metadata["trust"] == "untrusted_history"


def test_the_retriever_composes_as_a_runnable_and_runs_async(server: LiveServer, api: Api) -> None:
    scope_id = api.new_scope(prefix="langchain")
    api.add(scope_id, SETTLEMENT, kind="fact")
    retriever = PowerContextRetriever(scope_id=scope_id, base_url=server.base_url)
    chain = retriever | RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs))

    assert asyncio.run(chain.ainvoke("settlement batch")) == SETTLEMENT
    assert retriever.invoke("nothing here matches zebra") == []
