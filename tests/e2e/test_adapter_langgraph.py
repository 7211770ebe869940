"""The LangGraph store (issue 41, item 8) against the real ``langgraph`` and a real Server: items are Atomic Memory
in one Scope, a second put is a new revision, a delete forgets, search uses the Server's search, and a compiled
graph's nodes reach it through LangGraph's own store injection."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest

from tests.conftest import LiveServer
from tests.frameworks import framework
from tests.support import Api

framework("langgraph.store.base", "langgraph")

from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.store.base import BaseStore  # noqa: E402

from powercontext.adapters.langgraph import PowerContextStore  # noqa: E402


def memories(api: Api, scope_id: str, state: str = "active") -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = api.http.get(f"/v1/scopes/{scope_id}/atomic-memory", params={"state": state}).json()[
        "items"
    ]
    return items


def test_put_get_revise_search_and_delete(server: LiveServer, api: Api) -> None:
    scope_id = api.new_scope(prefix="langgraph")
    store = PowerContextStore(scope_id, base_url=server.base_url)
    user = ("users", "alice smith")

    store.put(user, "lunch", {"text": "Alice is vegetarian", "kind": "fact"})
    store.put(user, "profile", {"team": "payments", "level": 3})
    store.put(user, "lunch", {"text": "Alice is vegan since March", "kind": "fact"})

    item = store.get(user, "lunch")
    assert item is not None and item.value == {"text": "Alice is vegan since March", "kind": "fact"}
    assert item.namespace == user and item.key == "lunch"
    assert store.get(user, "profile").value == {"team": "payments", "level": 3}  # type: ignore[union-attr]
    assert store.get(("users", "bob"), "lunch") is None
    # Atomic Memory underneath: the revised text is revision 2 of the same memory, readable by any client.
    [lunch] = [m for m in memories(api, scope_id) if m["kind"] == "fact"]
    assert lunch["text"] == "Alice is vegan since March" and lunch["head_revision"] == 2

    hits = store.search(("users",), query="vegan")
    assert [(h.key, h.value["text"]) for h in hits] == [("lunch", "Alice is vegan since March")]
    assert hits[0].score is not None
    assert [h.key for h in store.search(user, filter={"team": "payments"})] == ["profile"]
    assert store.list_namespaces(prefix=("users",)) == [user]

    store.delete(user, "lunch")
    assert store.get(user, "lunch") is None
    assert [m["text"] for m in memories(api, scope_id, "forgotten")] == ["Alice is vegan since March"]


def test_keys_and_labels_that_do_not_fit_a_tag_are_refused(server: LiveServer, api: Api) -> None:
    store = PowerContextStore(api.new_scope(prefix="langgraph"), base_url=server.base_url)
    with pytest.raises(ValueError, match="56 characters"):
        store.put(("users",), "k" * 57, {"text": "too long a key"})


class Turn(TypedDict):
    user: str
    question: str
    answer: str


def remember(state: Turn, *, store: BaseStore) -> dict[str, str]:
    store.put(("users", state["user"]), "deploys", {"text": "Deploys happen on Tuesdays", "kind": "fact"})
    return {}


async def recall(state: Turn, *, store: BaseStore) -> dict[str, str]:
    hits = await store.asearch(("users", state["user"]), query=state["question"])
    return {"answer": hits[0].value["text"] if hits else "nothing"}


def test_a_compiled_graph_reaches_the_store(server: LiveServer, api: Api) -> None:
    scope_id = api.new_scope(prefix="langgraph")
    graph = StateGraph(Turn)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    app = graph.compile(store=PowerContextStore(scope_id, base_url=server.base_url))

    result = asyncio.run(app.ainvoke({"user": "carol", "question": "when are deploys?", "answer": ""}))

    assert result["answer"] == "Deploys happen on Tuesdays"
    assert [m["text"] for m in memories(api, scope_id)] == ["Deploys happen on Tuesdays"]
