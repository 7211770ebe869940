"""A real Server on ``seekdb:///dir?fulltext=native``, filled by ``store copy`` from SQLite: prepare finds a CJK
word inside a longer text through the engine's FULLTEXT index, and a write made over HTTP is found by the next
prepare."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

from powercontext.store.base import NewMemory
from powercontext.store.sqlite import SqliteStore
from tests import forked
from tests.conftest import live_server
from tests.seekdb_support import new_engine_dir, require_seekdb


def selected_texts(http: httpx.Client, query: str) -> list[str]:
    r = http.post("/v1/context/prepare", json={"scope_id": "p:cjk", "query": query, "include_receipt": True})
    assert r.status_code == 200, r.text
    body = r.json()
    assert {g["mode"] for g in body["receipt"]["retrieval"]["searches"]} == {"fts"}
    return [line for line in (body["content"] or "").splitlines() if "数据库" in line or "ledger" in line]


def test_a_server_on_a_native_fulltext_database_prepares_from_the_engine_index(tmp_path: Path) -> None:
    require_seekdb()
    source = SqliteStore(tmp_path / "source.db")
    source.create_scope("p:cjk", "CJK", [])
    source.create_memories(
        "p:cjk",
        [NewMemory("分布式数据库系统支持全文索引", "fact", ()), NewMemory("Deploys freeze on Thursdays", "fact", ())],
    )
    source.close()
    target = f"seekdb://{new_engine_dir(tmp_path)}?fulltext=native"
    copied = forked.run(
        [
            sys.executable,
            "-m",
            "powercontext",
            "store",
            "copy",
            "--from",
            f"sqlite://{tmp_path / 'source.db'}",
            "--to",
            target,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert copied.returncode == 0, copied.stderr
    assert "every table matches" in copied.stdout
    with live_server(tmp_path, store=target) as server, httpx.Client(base_url=server.base_url, timeout=30) as http:
        assert any("分布式数据库系统支持全文索引" in line for line in selected_texts(http, "数据库"))
        r = http.post("/v1/scopes/p:cjk/atomic-memory", json={"text": "The ledger closes at midnight", "kind": "fact"})
        assert r.status_code == 201, r.text
        assert any(
            "The ledger closes at midnight" in line for line in selected_texts(http, "when does the ledger close")
        )


def test_hybrid_prepare_on_native_fulltext_and_native_vectors(tmp_path: Path) -> None:
    require_seekdb()
    store = f"seekdb://{new_engine_dir(tmp_path)}?fulltext=native&vectors=native"
    settings = {"POWERCONTEXT_EMBEDDINGS": "local"}
    with (
        live_server(tmp_path, settings, store=store) as server,
        httpx.Client(base_url=server.base_url, timeout=60) as http,
    ):
        assert http.post("/v1/scopes", json={"scope_id": "p:cjk", "title": "CJK"}).status_code == 201
        items = [
            {"text": "分布式数据库系统支持全文索引", "kind": "fact"},
            {"text": "The ledger closes at midnight and reopens at six", "kind": "fact"},
            {"text": "Payment retries back off exponentially", "kind": "decision"},
        ]
        r = http.post("/v1/scopes/p:cjk/atomic-memory/batch", json={"items": items})
        assert r.status_code == 201, r.text
        body = http.post(
            "/v1/context/prepare",
            json={"scope_id": "p:cjk", "query": "when is the books' closing time", "include_receipt": True},
        ).json()
        searches = body["receipt"]["retrieval"]["searches"]
        assert {(g["family"], g["mode"]) for g in searches if g["family"] == "atomic-memory"} == {
            ("atomic-memory", "hybrid")
        }
        assert "The ledger closes at midnight" in (body["content"] or "")
