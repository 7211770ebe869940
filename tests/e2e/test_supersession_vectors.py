"""Newer first with vectors: under hybrid recall the stored embeddings of the hits help decide that two
statements cover the same subject, so a replacement that shares few words with the statement it replaced still
ranks above it. Real Server processes, one with an OpenAI-compatible embedding server on loopback, one without."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing

import pytest

from tests.conftest import LiveServer, live_server
from tests.embedding_fixture import start_embedding_server
from tests.seekdb_support import new_engine_dir, require_seekdb
from tests.support import Api, Fragment, parse_fragments, scope_with_history

DIM = 128
# Two subject terms in common ("ingest", "queue") among a dozen each: too little overlap for the terms alone. The
# fake provider's bag-of-words vectors also count the words the terms leave out ("the", "is", "by", …), so these
# two are each other's nearest among the Scope's memories, far closer than any other pair.
OLD = (
    "The ingest queue is drained by the Kafka cluster in Frankfurt, partitioned by tenant and retained for seven days."
)
NEW = "The ingest queue is now served by the Pulsar brokers in Dublin, sharded by region and compacted for an hour."
FILLERS = [
    "Billing invoices render Helvetica fonts through PDF workers.",
    "On-call rotation swaps every Monday morning.",
    "Design reviews need two approvals from staff engineers.",
    "Feature flags expire after ninety days.",
    "Laptops get disk encryption enforced through MDM profiles.",
    "Quarterly planning starts six weeks ahead.",
    "Support tickets tagged urgent page whoever holds pager duty.",
    "Marketing website builds with Hugo, deploys from Netlify.",
]
QUERY = "How does the ingest queue drain through the Kafka cluster in Frankfurt?"


@pytest.fixture(scope="module")
def embedding_settings() -> Iterator[dict[str, str]]:
    with start_embedding_server(DIM) as embeddings:
        yield {
            "POWERCONTEXT_EMBEDDINGS": "openai-compatible",
            "POWERCONTEXT_EMBEDDINGS_BASE_URL": embeddings.base_url,
            "POWERCONTEXT_EMBEDDINGS_MODEL": "fake-embed",
            "POWERCONTEXT_EMBEDDINGS_DIMENSION": str(DIM),
        }


@pytest.fixture(scope="module")
def hybrid_server(tmp_path_factory: pytest.TempPathFactory, embedding_settings: dict[str, str]) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("supersession-vectors"), embedding_settings) as live:
        yield live


def _seed(api: Api) -> tuple[str, str, str]:
    scope, (old, new) = scope_with_history(
        api, FILLERS, "2025-01-10", [(OLD, "fact", "2024-11-02"), (NEW, "decision", "2025-03-20")]
    )
    return scope, old, new


def _prepared(api: Api, scope: str, query: str) -> tuple[list[Fragment], str]:
    r = api.prepare(scope, query, include_receipt=True)
    assert r.status_code == 200, r.text
    body = r.json()
    mode = next(g["mode"] for g in body["receipt"]["retrieval"]["searches"] if g["family"] == "atomic-memory")
    return parse_fragments(body["content"]), mode


def _order(api: Api, scope: str, query: str) -> tuple[list[str], str]:
    fragments, mode = _prepared(api, scope, query)
    return [f.item["citation"]["artifact"]["artifact_id"] for f in fragments], mode


def test_hybrid_recall_ranks_the_replacement_its_vectors_tie_to_the_old_statement_first(
    hybrid_server: LiveServer,
) -> None:
    with closing(Api(hybrid_server.base_url)) as api:
        scope, old_id, new_id = _seed(api)
        ids, mode = _order(api, scope, QUERY)
    assert mode == "hybrid"
    assert ids.index(new_id) < ids.index(old_id)
    assert old_id in ids  # ordered, never dropped


def test_full_text_recall_has_no_vectors_and_keeps_the_ranked_order(server: LiveServer) -> None:
    with closing(Api(server.base_url)) as api:
        scope, old_id, new_id = _seed(api)
        ids, mode = _order(api, scope, QUERY)
    assert mode == "fts"
    assert ids.index(old_id) < ids.index(new_id)


def test_a_question_about_history_keeps_the_ranked_order_under_hybrid_too(hybrid_server: LiveServer) -> None:
    with closing(Api(hybrid_server.base_url)) as api:
        scope, old_id, new_id = _seed(api)
        ids, _ = _order(api, scope, "How did the ingest queue originally drain through Kafka in Frankfurt?")
    assert ids.index(old_id) < ids.index(new_id)


def test_sqlite_and_seekdb_decide_alike_under_hybrid_recall(
    tmp_path_factory: pytest.TempPathFactory, hybrid_server: LiveServer, embedding_settings: dict[str, str]
) -> None:
    # The vector test reads the stored float32 bytes on both stores, so it decides alike; the fillers, whose
    # cosines to the query are exactly equal, come in the same (insertion) order on both.
    require_seekdb()
    base = tmp_path_factory.mktemp("supersession-vectors-seekdb")
    with live_server(base, embedding_settings, store=f"seekdb://{new_engine_dir(base)}") as seekdb:
        answers = []
        for live in (hybrid_server, seekdb):
            with closing(Api(live.base_url)) as api:
                scope, _, _ = _seed(api)
                fragments, mode = _prepared(api, scope, QUERY)
            assert mode == "hybrid"
            answers.append([(f.item["kind"], f.item["observed"], f.item["content"]) for f in fragments])
    sqlite_items, seekdb_items = answers
    assert [content for _, _, content in sqlite_items[:2]] == [NEW, OLD]
    assert seekdb_items == sqlite_items
