"""``POST /v1/context/explain`` for code candidates and for expansion rounds the prepare did not retain.

Code: the ranks and scores are the run's own (the selection they explain is the prepare's, byte for byte), and
the order they report is the order the code search answered in. Rounds: an injected expander (the Runtime's
public seam, as in ``test_expansion.py``) makes round 1 find a new memory and round 2 fail; explain lists that
memory with the round that found it and the ``not_retained`` fate, and the Receipt's counts stay untouched.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from powercontext.domain.candidates import Candidate
from powercontext.recall.expansion import ExpansionFailed
from powercontext.recall.trace import RecallTrace
from powercontext.store.sqlite import SqliteStore
from tests import forked
from tests.code_support import git, write
from tests.conftest import StartInProcess, code_roots_for_tests, live_server
from tests.embedding_fixture import start_embedding_server
from tests.support import Api, artifact_id, code_vectors_filled, strict_json, wait_until

DEFINITION = (
    "def settle_ledger_batch(rows):\n    total = 0\n    for row in rows:\n        total += row\n    return total\n"
)
CALLERS = "from core.impl import settle_ledger_batch\n\n\n" + "".join(
    f"def test_settle_ledger_batch_{i}():\n    assert settle_ledger_batch([{i}]) == {i}\n\n\n" for i in range(6)
)
REPORT = (
    "from core.impl import settle_ledger_batch\n\n\ndef monthly_report(rows):\n    return settle_ledger_batch(rows)\n"
)
UNRELATED = "def render_invoice_pdf(invoice):\n    return invoice\n"
CODE_ONLY = {"sections": []}


def _indexed_repo(api: Api, root: Path) -> str:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.invalid")
    git(root, "config", "user.name", "t")
    write(root, "src/core/impl.py", DEFINITION)
    write(root, "tests/test_settle_ledger_batch.py", CALLERS)
    write(root, "src/reports/monthly.py", REPORT)
    write(root, "src/invoices/pdf.py", UNRELATED)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "ledger")
    sid = api.new_scope(prefix="explain-code")
    r = api.post(f"/v1/scopes/{sid}/code/index", {"path": str(root)})
    assert r.status_code in (200, 201), r.text
    assert wait_until(lambda: code_vectors_filled(api), timeout=30)  # a provider embeds after the answer
    return sid


def _explain(api: Api, body: dict[str, Any]) -> dict[str, Any]:
    r = api.post("/v1/context/explain", body)
    assert r.status_code == 200, r.text
    return strict_json(r.content)


def test_code_candidates_carry_the_runs_ranks_scores_and_terms(api: Api, tmp_path: Path) -> None:
    sid = _indexed_repo(api, tmp_path / "ledger-repo")
    body = {"scope_id": sid, "query": "settle_ledger_batch", "include_code": True, "assembly": CODE_ONLY}
    prepared = strict_json(api.post("/v1/context/prepare", {**body, "include_receipt": True}).content)
    explained = _explain(api, body)
    again = explained["prepared"]
    assert again["content"] == prepared["content"]
    assert again["receipt"]["selected"] == prepared["receipt"]["selected"]

    code = sorted((c for c in explained["candidates"] if c["family"] == "code"), key=lambda c: c["rank"])
    paths = [c["code_evidence"]["path"] for c in code]
    # The pdf file shares no term with the query: the search never ranked it.
    assert sorted(paths) == ["src/core/impl.py", "src/reports/monthly.py", "tests/test_settle_ledger_batch.py"]
    assert [c["rank"] for c in code] == [1, 2, 3]
    # The selection is these candidates in rank order, with the Receipt's rendered bytes.
    strip = prepared["receipt"]["selected"]
    chosen = sorted((c for c in code if c["fate"]["outcome"] == "selected"), key=lambda c: c["fate"]["position"])
    assert [c["code_evidence"] for c in chosen] == [s["code_evidence"] for s in strip]
    assert [c["fate"]["rendered_bytes"] for c in chosen] == [s["rendered_bytes"] for s in strip]
    assert [c["rank"] for c in chosen] == sorted(c["rank"] for c in chosen)

    by_path = dict(zip(paths, code, strict=True))
    definition, callers = by_path["src/core/impl.py"], by_path["tests/test_settle_ledger_batch.py"]
    for c in code:
        # A server without embeddings: full text only, so the fused list is the BM25 list in its final order.
        assert [r["channel"] for r in c["ranks"]] == ["fts", "fused"]
        assert c["cosine"] is None and c["bm25"] is not None and c["fused"] == c["bm25"]
        fused_rank = next(r["rank"] for r in c["ranks"] if r["channel"] == "fused")
        assert fused_rank == c["rank"]
        assert all(r["round"] == 0 and r["scope_id"] == sid for r in c["ranks"])
    # The test file repeats the name (and has it in its path), so BM25 prefers it; the definition still leads,
    # and explain says why instead of showing an order its scores contradict.
    assert callers["bm25"] > definition["bm25"], "precondition: BM25 alone ranks the callers above the definition"
    assert definition["rank"] == 1 and definition["defines_query_identifier"] is True
    rest = [c for c in code if not c["defines_query_identifier"]]
    assert [c["bm25"] for c in rest] == sorted((c["bm25"] for c in rest), reverse=True)
    assert {c["defines_query_identifier"] for c in rest} == {False}

    # Matched terms are the code search's identifier terms found in each range (text or path).
    terms = explained["code_query_terms"]
    assert {"settle_ledger_batch", "settle", "ledger", "batch"} <= set(terms)
    for c in code:
        assert {"settle_ledger_batch", "ledger", "batch"} <= set(c["matched_terms"]) <= set(terms)
    assert "monthly" not in terms and "monthly" not in by_path["src/reports/monthly.py"]["matched_terms"]
    # No code text in the answer outside the prepared content.
    raw = str({k: v for k, v in explained.items() if k != "prepared"})
    assert "total += row" not in raw and "monthly_report" not in raw


def test_hybrid_code_search_reports_cosine_and_its_reciprocal_rank_fusion(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with start_embedding_server(32) as embeddings:
        settings = {
            "POWERCONTEXT_EMBEDDINGS": "openai-compatible",
            "POWERCONTEXT_EMBEDDINGS_BASE_URL": embeddings.base_url,
            "POWERCONTEXT_EMBEDDINGS_MODEL": "fake-embed",
            "POWERCONTEXT_EMBEDDINGS_DIMENSION": "32",
        } | code_roots_for_tests(tmp_path_factory)
        (tmp_path / "server").mkdir()
        with live_server(tmp_path / "server", settings) as live:
            api = Api(live.base_url)
            sid = _indexed_repo(api, tmp_path / "ledger-repo")
            body = {"scope_id": sid, "query": "settle_ledger_batch", "include_code": True, "assembly": CODE_ONLY}
            prepared = strict_json(api.post("/v1/context/prepare", {**body, "include_receipt": True}).content)
            explained = _explain(api, body)
            api.close()
    assert explained["prepared"]["content"] == prepared["content"]
    assert explained["prepared"]["receipt"]["selected"] == prepared["receipt"]["selected"]
    code = sorted((c for c in explained["candidates"] if c["family"] == "code"), key=lambda c: c["rank"])
    by_path = {c["code_evidence"]["path"]: c for c in code}
    # The vector channel ranks every embedded chunk, so the file sharing no term is a candidate too.
    assert set(by_path) == {
        "src/core/impl.py", "src/reports/monthly.py", "tests/test_settle_ledger_batch.py", "src/invoices/pdf.py"
    }  # fmt: skip
    pdf = by_path["src/invoices/pdf.py"]
    assert pdf["bm25"] is None and pdf["matched_terms"] == [] and pdf["cosine"] is not None
    for c in code:
        channels = {r["channel"]: r for r in c["ranks"]}
        assert "vector" in channels and channels["fused"]["rank"] == c["rank"]
        assert c["cosine"] == channels["vector"]["score"] and -1.0 <= c["cosine"] <= 1.0
        # Code fuses by reciprocal rank (k = 60, both weights 1): the score follows from the reported ranks.
        expected = sum(1 / (60 + channels[ch]["rank"]) for ch in ("fts", "vector") if ch in channels)
        assert c["fused"] == pytest.approx(expected, rel=1e-9)
    rest = [c for c in code if not c["defines_query_identifier"]]
    assert [c["fused"] for c in rest] == sorted((c["fused"] for c in rest), reverse=True)
    assert by_path["src/core/impl.py"]["defines_query_identifier"] is True and code[0] is by_path["src/core/impl.py"]


class FailingSecondRound:
    """Round 1 widens the query to find the platform note; round 2 fails, so neither round is retained."""

    model_backed = False

    def __init__(self, keep_query: bool = True) -> None:
        self.keep_query = keep_query

    def round_query(
        self, round: int, query: str, scope_id: str, seeds: Sequence[Candidate], trace: RecallTrace
    ) -> str | None:
        if round == 2:
            raise ExpansionFailed("scripted")
        return f"{query} release train platform" if self.keep_query else "release train platform"


def test_candidates_of_rounds_not_retained_are_listed_with_their_round(
    inprocess_server: StartInProcess, sqlite_store: SqliteStore
) -> None:
    live = inprocess_server(sqlite_store, expander=FailingSecondRound())
    api = live.api
    sid = api.new_scope()
    for i in range(3):
        api.add(sid, f"ship cadence note {i} about the weekly cut", "fact")
    platform = artifact_id(api.add(sid, "the release train leaves on tuesdays from the platform branch", "fact"))
    body = {"scope_id": sid, "query": "ship cadence", "assembly": {"sections": [{"family": "memory", "limit": 8}]}}
    prepared = strict_json(api.post("/v1/context/prepare", {**body, "include_receipt": True}).content)
    explained = _explain(api, {**body, "expected": [platform]})

    receipt = explained["prepared"]["receipt"]
    assert receipt["retrieval"]["rounds"] == [
        {"round": 0, "outcome": "completed", "retained": True},
        {"round": 1, "outcome": "completed", "retained": False},
        {"round": 2, "outcome": "expansion_failed", "retained": False},
    ]
    assert explained["prepared"]["content"] == prepared["content"]
    assert receipt["selected"] == prepared["receipt"]["selected"]
    memories = {c["artifact_address"]["artifact"]["artifact_id"]: c for c in explained["candidates"]}
    found = memories[platform]
    assert found["fate"] == {
        "outcome": "not_retained",
        "round": 1,
        "position": None,
        "rendered_bytes": None,
        "truncated": False,
        "reason": None,
    }
    assert {r["round"] for r in found["ranks"]} == {1}
    # Matched terms are the request's own: the widened query that found it is never reported.
    assert explained["query_terms"] == ["ship", "cadenc"] and found["matched_terms"] == []
    # The round-0 notes keep the fates the build gave them; the abandoned pool adds no omission to the Receipt.
    others = [c for a, c in memories.items() if a != platform]
    assert len(others) == 3 and {c["fate"]["outcome"] for c in others} == {"selected"}
    assert receipt["omitted"] == prepared["receipt"]["omitted"]
    assert not any(g["family"] == "atomic-memory" and g["reason"] != "not_retrieved" for g in receipt["omitted"])
    [landed] = explained["expected"]
    assert landed["where"] == "candidate" and landed["fate"]["outcome"] == "not_retained"
    assert "round 1" in landed["explanation"] and "not retain" in landed["explanation"]
    # The CLI's table names that fate too.
    env = {"PATH": "/usr/bin:/bin", "POWERCONTEXT_URL": live.base_url, "COLUMNS": "220"}
    command = [sys.executable, "-m", "powercontext", "context", "explain", "-s", sid, "-q", "ship cadence"]
    table = forked.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert table.returncode == 0, table.stderr
    assert "round 1 not retained" in table.stdout and "None" not in table.stdout


def test_exclusions_decided_in_an_abandoned_round_are_not_reported_as_omissions(
    inprocess_server: StartInProcess, sqlite_store: SqliteStore
) -> None:
    """Round 1 finds more new memories than the pool has room for; round 2 fails, so round 1's pool cut never
    happened as far as the build (and the Receipt) is concerned: those memories are not_retained, not family_limit."""
    live = inprocess_server(sqlite_store, expander=FailingSecondRound(keep_query=False))
    api = live.api
    sid = api.new_scope()
    for i in range(4):
        api.add(sid, f"ship cadence note {i}", "fact")
    for i in range(30):
        api.add(sid, f"release train platform note {i}", "fact")
    # An empty Topic Memory family stays thin after round 1 filled the memory pool, so round 2 runs (and fails).
    sections = [{"family": "memory", "limit": 8}, {"family": "topic-memory", "limit": 2}]
    body = {"scope_id": sid, "query": "ship cadence", "assembly": {"sections": sections}}
    explained = _explain(api, body)
    receipt = explained["prepared"]["receipt"]
    assert [r["retained"] for r in receipt["retrieval"]["rounds"]] == [True, False, False]
    memories = [c for c in explained["candidates"] if c["family"] == "atomic-memory"]
    later = [c for c in memories if c["fate"]["outcome"] == "not_retained"]
    # Round 1's list is the pool depth (16) deep and all new: 12 fit beside round 0's 4, 4 were cut by the pool's
    # cap. The round was abandoned, so neither happened for the build; all 16 are not_retained.
    assert len(later) == 16 and {c["fate"]["round"] for c in later} == {1}
    assert {c["fate"]["outcome"] for c in memories if c not in later} == {"selected"}
    assert not any(g["family"] == "atomic-memory" and g["reason"] == "family_limit" for g in receipt["omitted"])
