"""A Scope's ranking depends only on that Scope: on every backend, its full-text scores and its prepare's
Receipt are the same whether it is alone in the database or beside 10,000 memories of other Scopes.

BM25's statistics (document count, average length, documents per term) are per Scope. Before, the same 12
memories scored "SQLite" 2.208 beside other Scopes and 0.0 alone: another tenant's vocabulary moved what this
Scope's agent received.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Callable
from typing import Any, cast

from powercontext.contract.prepare import PrepareContextRequest
from powercontext.runtime import Runtime
from powercontext.store.base import ExperienceContent, ExperienceDraft, FamilyStore, NewMemory, NewTopic, Store
from powercontext.store.code import CodeStore, NewCodeChunk, NewCodeFile
from powercontext.text.tokenize import query_terms
from tests.support import sha256_of

SCOPE = "team:isolated"
QUERIES = ("SQLite", "SQLite WAL checkpoint", "deploy the ledger service", "retry queue backoff", "write_ahead_log")
MEMORIES = (
    "SQLite runs in WAL mode on the laptop",
    "SQLite checkpoint runs every 1000 pages",
    "The ledger service uses SQLite for its outbox",
    "Deploy the ledger service with make deploy",
    "SQLite busy timeout is ten seconds",
    "Retry queue backoff doubles up to one minute",
    "SQLite WAL files live next to the database",
    "Never deploy on Fridays",
    "SQLite vacuum runs weekly on the ledger database",
    "The retry queue is drained by the ledger worker",
    "SQLite foreign keys are switched on per connection",
    "Deploy previews come from the staging branch",
)
# Words of the Scope above, mixed with others at other frequencies: shared words get very different document
# counts in the other Scopes, and their texts are longer (another average length).
_SHARED = "wal deploy ledger retry queue checkpoint service database"
_FOREIGN = "postgres kafka shard replica tenant billing invoice cache redis latency rollback canary"
OTHER_WORDS = ["sqlite"] * 3 + _SHARED.split(" ") + _FOREIGN.split(" ")
OTHERS = 10_000
OTHER_SCOPES = 10


def _code_file(path: str, text: str) -> NewCodeFile:
    from powercontext.code.identifiers import identifier_terms, path_terms

    lines = text.count("\n")
    chunk = NewCodeChunk(1, lines, sha256_of(text), text, " ".join(identifier_terms(text)))
    return NewCodeFile(path, sha256_of(text), "python", len(text), lines, " ".join(path_terms(path)), (chunk,))


def _fill_scope(store: Store, scope_id: str, texts: list[str], rng: random.Random) -> None:
    """Memories (batched), Topic Memory, Experience and code of one Scope, all sharing its vocabulary."""
    for start in range(0, len(texts), 500):
        store.create_memories(scope_id, [NewMemory(t, "fact", ()) for t in texts[start : start + 500]])
    families = cast(FamilyStore, store)
    for i in range(3):
        families.create_topic(scope_id, NewTopic(f"SQLite topic {i}", rng.choice(texts), ()))
    for i in range(2):
        content = ExperienceContent(f"deploy of the ledger {i}", rng.choice(texts), "SQLite without WAL")
        candidate = families.propose_experience(scope_id, ExperienceDraft(content, ()))
        families.approve_candidate(scope_id, candidate.candidate_id, None)
    code = cast(CodeStore, store)
    code.register_code_tree(scope_id, "dir:one", "dir", "/srv/one", 100_000)
    code.put_code_files(
        scope_id,
        "dir:one",
        [
            _code_file("ledger/sqlite_wal.py", "def write_ahead_log(db):\n    return db.checkpoint()\n"),
            _code_file(f"retry/queue_{rng.randrange(99)}.py", "def retry_queue_backoff():\n    return 2\n"),
        ],
    )
    code.finish_code_index(scope_id, "dir:one", [])


def _observe(store: Store) -> dict[str, Any]:
    """Every full-text score of the Scope, and every prepare's content and Receipt (without its id and timings)."""
    families = cast(FamilyStore, store)
    code = cast(CodeStore, store)
    seen: dict[str, Any] = {}
    runtime = Runtime(store)
    for query in QUERIES:
        terms = query_terms(query)
        seen[f"memory {query}"] = [(h.record.key, h.score) for h in store.search_text(SCOPE, terms, 50)]
        seen[f"topic {query}"] = [(h.record.key, h.score) for h in families.search_topics(SCOPE, terms, 50)]
        seen[f"experience {query}"] = [(h.record.key, h.score) for h in families.search_experiences(SCOPE, terms, 50)]
        seen[f"code {query}"] = [(h.chunk.path, h.score) for h in code.search_code(SCOPE, terms, 50)]
        request = PrepareContextRequest(scope_id=SCOPE, query=query, include_receipt=True, include_code=True)
        body = json.loads(runtime.prepare(request, str(uuid.uuid4())).response_body())
        receipt = body["receipt"]
        del receipt["receipt_id"]
        for stage in receipt["stages"]:
            del stage["duration_ms"]
        seen[f"prepare {query}"] = body
    return seen


def test_a_scope_ranks_the_same_alone_and_beside_10000_memories_of_other_scopes(
    open_store: Callable[[], Store],
) -> None:
    store = open_store()
    rng = random.Random(20)
    store.create_scope(SCOPE, "isolated", [])
    _fill_scope(store, SCOPE, list(MEMORIES), rng)
    alone = _observe(store)
    assert alone["memory SQLite"], "the Scope's own memories are found"
    assert all(alone[f"{family} SQLite"] for family in ("topic", "experience"))
    assert alone["code write_ahead_log"]

    started = time.monotonic()
    per_scope = OTHERS // OTHER_SCOPES
    for n in range(OTHER_SCOPES):
        other = f"team:other-{n}"
        store.create_scope(other, "other", [])
        texts = [" ".join(rng.choices(OTHER_WORDS, k=rng.randint(4, 30))) + f" note {i}" for i in range(per_scope)]
        _fill_scope(store, other, texts, rng)
    filled = time.monotonic() - started
    print(f"{OTHERS:,} memories in {OTHER_SCOPES} other Scopes written in {filled:.1f} s")

    beside = _observe(store)
    for key, value in alone.items():
        assert beside[key] == value, key
