"""A LangChain retriever over prepared context (``pip install 'powercontext[langchain]'``).

``PowerContextRetriever(scope_id=...)`` is a ``langchain_core`` ``BaseRetriever``: ``invoke(query)`` (and
``ainvoke``) answers with the items the Server prepares for that query, in injection order, one ``Document`` each:
its ``page_content`` the exact stored text (possibly truncated to the byte budget), its ``id`` and metadata the
item's exact address (see ``PreparedItem.metadata``). It fits wherever LangChain takes a retriever or a runnable.
"""

from __future__ import annotations

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

from powercontext.adapters.prepared_items import ContextCall, PreparedItem, prepared_items

__all__ = ["PowerContextRetriever"]


class PowerContextRetriever(BaseRetriever):
    """Prepared context as LangChain documents. Each call prepares anew; nothing is cached.

    ``scope_id``: the Scope to prepare from. ``base_url``/``token`` default to ``POWERCONTEXT_URL`` /
    ``POWERCONTEXT_TOKEN``; ``max_bytes`` is the prepare budget (512..32768); ``include_code`` adds up to 4
    exact code ranges.
    """

    scope_id: str
    base_url: str | None = None
    # Never in a repr, a dump or a trace of the retriever's settings.
    token: str | None = Field(default=None, repr=False, exclude=True)
    max_bytes: int = 8000
    include_code: bool = False
    timeout: float = 30.0

    def _call(self) -> ContextCall:
        return ContextCall(self.scope_id, self.base_url, self.token, self.max_bytes, self.include_code, self.timeout)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return _documents(prepared_items(self._call().prepare(query)))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        return _documents(prepared_items(await self._call().aprepare(query)))


def _documents(items: list[PreparedItem]) -> list[Document]:
    return [Document(page_content=item.text, metadata=item.metadata(), id=item.address) for item in items]
