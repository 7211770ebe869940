"""A LangGraph ``BaseStore`` over Atomic Memory (``pip install 'powercontext[langgraph]'``).

``PowerContextStore(scope_id=...)`` keeps a graph's long-term memory in one Scope of a PowerContext Server, so
the same memories are searched, prepared for agent hosts, explained in the Inspector and revised with exact
revisions. Each ``(namespace, key)`` is one Atomic Memory:

* its labels are tags: ``lg-ns0:users``, ``lg-ns1:alice``, ... and ``lg-key:<key>`` (percent-encoded; a label
  or key longer than 56 characters once encoded is refused, as are namespaces deeper than 30);
* a value ``{"text": ...}`` (optionally with a ``"kind"`` among the memory kinds) is the memory's text and kind,
  so agents and people read it as written; any other value is stored as its JSON (tag ``lg-json``), kind ``note``;
* ``put`` over an existing key writes a new revision (the earlier one stays readable); ``delete`` forgets it.

``search(namespace_prefix, query=...)`` runs the Server's search (full-text, vector or hybrid, as configured);
without a query it lists. Finding a key lists the Scope's memories: keep one Scope per graph's store.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from powercontext.adapters.prepared_items import ContextCall

if TYPE_CHECKING:
    from powercontext.client import PowerContextClient
    from powercontext.contract.memory import AtomicMemory

__all__ = ["PowerContextStore"]

NS_TAG, KEY_TAG, JSON_TAG = "lg-ns", "lg-key:", "lg-json"
MAX_LABEL = 56
MAX_DEPTH = 30  # tags per memory are at most 32: the labels, the key and the JSON mark
KINDS = frozenset({"decision", "constraint", "fact", "state", "next-step", "outcome", "note"})
PAGE = 200


@dataclass(frozen=True)
class _Stored:
    """One memory seen as a store item."""

    namespace: tuple[str, ...]
    key: str
    artifact_id: str
    head_revision: int
    value: dict[str, Any]
    updated_at: datetime


def _label(text: str, what: str) -> str:
    encoded = quote(text, safe="")
    if not encoded or len(encoded) > MAX_LABEL:
        raise ValueError(f"a {what} must be 1..{MAX_LABEL} characters once percent-encoded for PowerContextStore")
    return encoded


def tags_for(namespace: tuple[str, ...], key: str, as_json: bool) -> list[str]:
    """The tags that name ``(namespace, key)`` (and mark a JSON value)."""
    if len(namespace) > MAX_DEPTH:
        raise ValueError(f"PowerContextStore takes namespaces of at most {MAX_DEPTH} labels")
    tags = [f"{NS_TAG}{depth}:{_label(part, 'namespace label')}" for depth, part in enumerate(namespace)]
    tags.append(KEY_TAG + _label(key, "key"))
    return [*tags, JSON_TAG] if as_json else tags


def text_and_kind(value: dict[str, Any]) -> tuple[str, str, bool]:
    """(memory text, kind, stored as JSON) for a store value."""
    text, kind = value.get("text"), value.get("kind", "note")
    if isinstance(text, str) and text.strip() and kind in KINDS and set(value) <= {"text", "kind"}:
        return text, kind, False
    return json.dumps(value, ensure_ascii=False, sort_keys=True), "note", True


def _stored(memory: AtomicMemory) -> _Stored | None:
    """The store item a memory holds; None for a memory this store did not write."""
    labels: dict[int, str] = {}
    key = None
    for tag in memory.tags:
        if tag.startswith(KEY_TAG):
            key = unquote(tag.removeprefix(KEY_TAG))
        elif tag.startswith(NS_TAG) and ":" in tag:
            depth, _, label = tag.removeprefix(NS_TAG).partition(":")
            if depth.isdigit():
                labels[int(depth)] = unquote(label)
    if key is None or sorted(labels) != list(range(len(labels))):
        return None
    if JSON_TAG in memory.tags:
        value = json.loads(memory.text)
    else:
        value = {"text": memory.text} if memory.kind == "note" else {"text": memory.text, "kind": memory.kind}
    namespace = tuple(labels[depth] for depth in range(len(labels)))
    ref = memory.artifact_address.artifact
    updated = datetime.fromisoformat(memory.created_at.replace("Z", "+00:00"))
    return _Stored(namespace, key, ref.artifact_id, memory.head_revision, value, updated)


def _item(stored: _Stored) -> Item:
    # A revision knows when it was written, not when revision 1 was: both times are the head's.
    return Item(
        value=stored.value,
        key=stored.key,
        namespace=stored.namespace,
        created_at=stored.updated_at,
        updated_at=stored.updated_at,
    )


def _matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = condition.path
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(want in ("*", got) for want, got in zip(path, part, strict=True))


def _filtered(value: dict[str, Any], wanted: dict[str, Any] | None) -> bool:
    return not wanted or all(value.get(name) == expected for name, expected in wanted.items())


class PowerContextStore(BaseStore):
    """LangGraph's long-term memory store, kept as Atomic Memory in one Scope of a PowerContext Server."""

    def __init__(self, scope_id: str, *, base_url: str | None = None, token: str | None = None) -> None:
        """``scope_id``: the (existing) Scope that holds the store; ``base_url``/``token`` default to
        ``POWERCONTEXT_URL`` / ``POWERCONTEXT_TOKEN``."""
        self.call = ContextCall(scope_id, base_url, token)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order and return their results (blocking)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.abatch(ops))
        with ThreadPoolExecutor(max_workers=1) as pool:  # called from inside an event loop: run on a thread
            return pool.submit(asyncio.run, self.abatch(ops)).result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order and return their results."""
        from powercontext.client import PowerContextClient

        async with PowerContextClient(self.call.base_url, token=self.call.token, timeout=self.call.timeout) as client:
            session = _Session(client, self.call.scope_id)
            return [await session.run(op) for op in ops]


class _Session:
    """One batch: the Scope's store items are listed at most once, and kept current by the batch's own puts."""

    def __init__(self, client: PowerContextClient, scope_id: str) -> None:
        self.client, self.scope_id = client, scope_id
        self._items: dict[tuple[tuple[str, ...], str], _Stored] | None = None

    async def run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            found = (await self._all()).get((tuple(op.namespace), op.key))
            return None if found is None else _item(found)
        if isinstance(op, PutOp):
            await self._put(op)
            return None
        if isinstance(op, SearchOp):
            return await self._search(op)
        if isinstance(op, ListNamespacesOp):
            return await self._namespaces(op)
        raise ValueError(f"PowerContextStore does not run {type(op).__name__}")

    async def _all(self) -> dict[tuple[tuple[str, ...], str], _Stored]:
        if self._items is None:
            self._items = {}
            cursor = None
            while True:
                page = await self.client.list_memories(self.scope_id, limit=PAGE, cursor=cursor)
                for memory in page.items:
                    stored = _stored(memory)
                    if stored is not None:
                        self._items.setdefault((stored.namespace, stored.key), stored)
                cursor = page.next_cursor
                if cursor is None:
                    break
        return self._items

    async def _put(self, op: PutOp) -> None:
        items = await self._all()
        name = (tuple(op.namespace), op.key)
        current = items.get(name)
        if op.value is None:
            if current is not None:
                await self.client.change_lifecycle(self.scope_id, current.artifact_id, "forget", current.head_revision)
                del items[name]
            return
        text, kind, as_json = text_and_kind(dict(op.value))
        tags = tags_for(name[0], op.key, as_json)
        written: AtomicMemory
        if current is None:
            written = await self.client.add_memory(self.scope_id, text, kind, tags)  # type: ignore[arg-type]
        else:
            written = await self.client.revise_memory(
                self.scope_id, current.artifact_id, current.head_revision, text, kind, tags  # type: ignore[arg-type]
            )
        stored = _stored(written)
        assert stored is not None
        items[name] = stored

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        wanted = op.offset + op.limit
        found: list[tuple[_Stored, float | None]]
        if op.query:
            hits = (await self.client.search_memory(self.scope_id, op.query, limit=50)).hits
            ranked = [(hit.artifact_address.artifact.artifact_id, hit.score) for hit in hits]
            by_id = {stored.artifact_id: stored for stored in (await self._all()).values()}
            found = [(by_id[ident], score) for ident, score in ranked if ident in by_id]
        else:
            newest = sorted((await self._all()).values(), key=lambda s: s.updated_at, reverse=True)
            found = [(stored, None) for stored in newest]
        chosen = [(s, sc) for s, sc in found if s.namespace[: len(prefix)] == prefix and _filtered(s.value, op.filter)]
        return [
            SearchItem(s.namespace, s.key, s.value, s.updated_at, s.updated_at, score)
            for s, score in chosen[op.offset : wanted]
        ]

    async def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        seen = {stored.namespace for stored in (await self._all()).values()}
        if op.match_conditions:
            seen = {ns for ns in seen if all(_matches(ns, condition) for condition in op.match_conditions)}
        if op.max_depth is not None:
            seen = {ns[: op.max_depth] for ns in seen}
        return sorted(seen)[op.offset : op.offset + op.limit]
