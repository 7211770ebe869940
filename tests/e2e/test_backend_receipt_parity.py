"""One scripted workload on the SQLite server and on the embedded-seekdb server: identical answers.

The workload writes every family (with revisions, lifecycle changes, a merge, a Candidate review and
a Profile), then prepares with Receipts and searches. Artifact ids are random and timings vary, so ids
are replaced by their creation order and durations, Receipt ids and digests of id-bearing content are
dropped; everything else — content, selected families and order, omission groups, search groups and
modes, byte counts, hit order and scores — must be equal field by field.
"""

from __future__ import annotations

import random
import re
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import LiveServer, live_server
from tests.seekdb_support import new_engine_dir, require_seekdb

_ID = re.compile(r"\b(?:am|tm|ex|exc)_[0-9a-z]{26}\b")
_WORDS = [
    "deploy",
    "sqlite",
    "wal",
    "mode",
    "cache",
    "index",
    "search",
    "vector",
    "memory",
    "billing",
    "invoice",
    "retry",
    "backoff",
    "queue",
    "worker",
    "python",
    "rust",
    "tabs",
    "spaces",
    "latency",
    "p99",
    "数据库",
    "测试",
    "部署",
    "缓存",
    "a",
    "b",
    "1",
    "2",
]


class Recorder:
    """Runs the workload against one server; remembers ids in creation order."""

    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=60.0)
        self.run = uuid.uuid4().hex[:10]
        self.ids: dict[str, int] = {}

    def scope(self, name: str, refs: tuple[str, ...] = ()) -> str:
        sid = f"parity-{self.run}-{name}"
        body = {"scope_id": sid, "title": name, "context_references": [f"parity-{self.run}-{r}" for r in refs]}
        self.ok(self.http.post("/v1/scopes", json=body), 201)
        return sid

    def ok(self, r: httpx.Response, status: int = 200) -> Any:
        assert r.status_code == status, r.text
        body = r.json()
        for found in _ID.findall(r.text):
            self.ids.setdefault(found, len(self.ids))
        return body

    def normalized(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: self.normalized(v)
                for k, v in value.items()
                if k not in ("duration_ms", "receipt_id", "content_digest", "created_at", "updated_at")
            }
        if isinstance(value, list):
            return [self.normalized(v) for v in value]
        if isinstance(value, str):
            text = _ID.sub(lambda m: f"<id {self.ids.get(m.group(), m.group())}>", value)
            return text.replace(self.run, "<run>")
        return value


def workload(rec: Recorder) -> list[Any]:
    rng = random.Random(1435)
    shared = rec.scope("shared")
    main = rec.scope("main", refs=("shared",))
    memories = []
    for sid, count in ((main, 40), (shared, 15)):
        for i in range(count):
            text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 14)))
            kind = rng.choice(["fact", "decision", "constraint", "note"])
            memories.append(
                rec.ok(
                    rec.http.post(f"/v1/scopes/{sid}/atomic-memory", json={"text": f"{i} {text}", "kind": kind}), 201
                )
            )
    ids = [m["artifact_address"]["artifact"]["artifact_id"] for m in memories]
    lifecycle = f"/v1/scopes/{main}/atomic-memory/{{}}/lifecycle"
    rec.ok(rec.http.post(lifecycle.format(ids[0]), json={"action": "forget"}))
    rec.ok(rec.http.post(lifecycle.format(ids[1]), json={"action": "retire"}))
    rec.ok(rec.http.post(lifecycle.format(ids[2]), json={"action": "forget"}))
    rec.ok(rec.http.post(lifecycle.format(ids[2]), json={"action": "restore"}))
    rec.ok(
        rec.http.put(
            f"/v1/scopes/{main}/atomic-memory/{ids[3]}",
            json={"expected_revision": 1, "text": "sqlite wal mode cache revised 数据库"},
        )
    )
    rec.ok(
        rec.http.post(
            f"/v1/scopes/{main}/atomic-memory/merges",
            json={
                "sources": [{"artifact_id": ids[4], "revision": 1}, {"artifact_id": ids[5], "revision": 1}],
                "text": "merged: deploy queue worker retry backoff",
                "kind": "decision",
            },
        ),
        201,
    )
    for title, body in (("Deploy pipeline", "blue green deploy with sqlite cache"), ("缓存 策略", "数据库 缓存 测试")):
        rec.ok(rec.http.post(f"/v1/scopes/{main}/topic-memory", json={"title": title, "body": body}), 201)
    candidate = rec.ok(
        rec.http.post(
            f"/v1/scopes/{main}/experience/candidates",
            json={"situation": "Flaky deploy tests", "what_worked": "Retry with backoff", "what_to_avoid": "Sleeping"},
        ),
        201,
    )
    rec.ok(
        rec.http.post(
            f"/v1/scopes/{main}/experience/candidates/{candidate['candidate_id']}/review", json={"decision": "approve"}
        )
    )
    rec.ok(rec.http.put(f"/v1/scopes/{main}/profile", json={"entries": [{"key": "style", "value": "tabs"}]}))

    answers: list[Any] = []
    for query, extra in (
        ("sqlite wal mode", {}),
        ("deploy retry backoff queue", {}),
        ("数据库 缓存", {}),
        ("a b 1 2", {}),
        ("billing invoice latency p99", {"max_bytes": 600}),
        ("flaky deploy tests", {"assembly": {"sections": [{"family": "experience", "limit": 2}]}}),
        (
            "python rust tabs",
            {"assembly": {"sections": [{"family": "memory", "limit": 8}, {"family": "profile", "limit": 1}]}},
        ),
        ("nothing matches zzqx", {}),
    ):
        body = {"scope_id": main, "query": query, "include_receipt": True, **extra}
        answers.append(rec.ok(rec.http.post("/v1/context/prepare", json=body)))
    for query in ("deploy retry backoff queue", "sqlite cache", "worker queue 测试"):
        answers.append(
            rec.ok(rec.http.post(f"/v1/scopes/{main}/atomic-memory/search", json={"query": query, "limit": 20}))
        )
    answers.append(rec.ok(rec.http.post(f"/v1/scopes/{main}/topic-memory/search", json={"query": "deploy 缓存"})))
    return [rec.normalized(a) for a in answers]


def test_one_workload_gives_identical_receipts_on_sqlite_and_seekdb(tmp_path: Path) -> None:
    # Fresh stores on both sides: BM25 statistics span every Scope of a store, so the session's shared
    # Servers (written to by other tests, not always on both backends) could rank differently.
    require_seekdb()
    with (
        live_server(tmp_path, log_name="sqlite.log") as server,
        live_server(tmp_path, store=f"seekdb://{new_engine_dir(tmp_path)}", log_name="seekdb.log") as seekdb_server,
    ):
        compare(server, seekdb_server)


def compare(server: LiveServer, seekdb_server: LiveServer) -> None:
    on_sqlite, on_seekdb = Recorder(server.base_url), Recorder(seekdb_server.base_url)
    try:
        expected, actual = workload(on_sqlite), workload(on_seekdb)
    finally:
        on_sqlite.http.close()
        on_seekdb.http.close()
    # Something was found and selected, so equality is not the trivial equality of empty answers.
    assert any(a.get("receipt", {}).get("selected") for a in expected)
    for i, (want, got) in enumerate(zip(expected, actual, strict=True)):
        assert got == want, f"answer {i} differs between SQLite and seekdb: {differences(want, got)[:5]}"


def differences(want: Any, got: Any, path: str = "") -> list[str]:
    """Field paths where two normalized answers differ (for a readable failure)."""
    if isinstance(want, dict) and isinstance(got, dict):
        return [d for k in sorted(set(want) | set(got)) for d in differences(want.get(k), got.get(k), f"{path}.{k}")]
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return [d for i, (a, b) in enumerate(zip(want, got, strict=True)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if want == got else [f"{path}: {str(want)[:80]!r} != {str(got)[:80]!r}"]
