"""A LlamaIndex retriever over prepared context (``pip install 'powercontext[llama-index]'``).

``PowerContextRetriever(scope_id=...)`` answers ``retrieve(query)`` (and ``aretrieve``) with the items the Server
prepares for that query, in injection order: one ``TextNode`` per item, its text the exact stored text (possibly
truncated to the byte budget) and its metadata the item's exact address (see ``PreparedItem.metadata``). Use it
wherever LlamaIndex takes a retriever (``RetrieverQueryEngine``, a ``RetrieverTool`` for an agent, ...).
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from powercontext.adapters.prepared_items import ContextCall, PreparedItem, prepared_items

__all__ = ["PowerContextRetriever"]


class PowerContextRetriever(BaseRetriever):
    """Prepared context as LlamaIndex nodes. Each call prepares anew; nothing is cached."""

    def __init__(
        self,
        scope_id: str,
        *,
        base_url: str | None = None,
        token: str | None = None,
        max_bytes: int = 8000,
        include_code: bool = False,
        timeout: float = 30.0,
        **kwargs: Any,
    ) -> None:
        """``scope_id``: the Scope to prepare from. ``base_url``/``token`` default to ``POWERCONTEXT_URL`` /
        ``POWERCONTEXT_TOKEN``; ``max_bytes`` is the prepare budget (512..32768); ``include_code`` adds up to
        4 exact code ranges. Other keyword arguments go to LlamaIndex's ``BaseRetriever``."""
        super().__init__(**kwargs)
        self.call = ContextCall(scope_id, base_url, token, max_bytes, include_code, timeout)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return _nodes(prepared_items(self.call.prepare(query_bundle.query_str)))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return _nodes(prepared_items(await self.call.aprepare(query_bundle.query_str)))


def _nodes(items: list[PreparedItem]) -> list[NodeWithScore]:
    # No score: the Server ranks by recall and fits a byte budget; the order of the list is its ranking.
    return [NodeWithScore(node=TextNode(id_=item.address, text=item.text, metadata=item.metadata())) for item in items]
