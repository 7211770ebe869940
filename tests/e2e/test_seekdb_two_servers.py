"""Two Server processes on one seekdb database, 16 concurrent writers each.

The second Server opens the same ``seekdb:///dir``, which attaches it to the first one's engine (its
private unix socket; nothing binds a network port). That is the multi-process situation of an
``oceanbase://`` deployment: separate sessions, one database, the shared writer lock (on the embedded
engine ``flock`` on a file in its directory).
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from powercontext.store.oceanbase.writer_lock import LOCK_FILE
from tests.conftest import LiveServer, live_server
from tests.seekdb_support import new_engine_dir, require_seekdb

WRITERS = 16
WRITES_EACH = 4


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, LiveServer]]:
    require_seekdb()
    base = tmp_path_factory.mktemp("two-servers")
    url = f"seekdb://{new_engine_dir(base)}"
    with (
        live_server(base, store=url, log_name="a.log") as first,
        live_server(base, store=url, log_name="b.log") as second,
    ):
        yield first, second


def scope_on(server: LiveServer) -> str:
    scope_id = f"two-{uuid.uuid4().hex[:10]}"
    r = httpx.post(server.base_url + "/v1/scopes", json={"scope_id": scope_id, "title": "t"}, timeout=30)
    assert r.status_code == 201, r.text
    return scope_id


def run_writers(servers: tuple[LiveServer, ...], work: Callable[[httpx.Client, int], Iterator[Any]]) -> list[Any]:
    """``WRITERS`` threads per Server, each with its own connection, all started before any is joined."""
    results: list[Any] = []
    lock = threading.Lock()

    def writer(server: LiveServer, n: int) -> None:
        with httpx.Client(base_url=server.base_url, timeout=60) as http:
            for outcome in work(http, n):
                with lock:
                    results.append(outcome)

    threads = [threading.Thread(target=writer, args=(s, n)) for s in servers for n in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    return results


def test_concurrent_writers_on_two_servers_lose_nothing(two_servers: tuple[LiveServer, LiveServer]) -> None:
    first, second = two_servers
    sid = scope_on(first)

    def work(http: httpx.Client, n: int) -> Iterator[tuple[int, str, str]]:
        for _ in range(WRITES_EACH):
            token = "z" + uuid.uuid4().hex  # one search term of its own
            r = http.post(f"/v1/scopes/{sid}/atomic-memory", json={"text": f"zebraword {token}", "kind": "fact"})
            aid = r.json()["artifact_address"]["artifact"]["artifact_id"] if r.status_code == 201 else r.text
            yield r.status_code, aid, token

    outcomes = run_writers(two_servers, work)
    statuses = Counter(status for status, _, _ in outcomes)
    assert statuses == {201: 2 * WRITERS * WRITES_EACH}, statuses
    assert len({aid for _, aid, _ in outcomes}) == 2 * WRITERS * WRITES_EACH
    # Every write is readable, exactly, from both Servers, and searchable there at once.
    for server in (first, second):
        with httpx.Client(base_url=server.base_url, timeout=60) as http:
            for _, aid, token in outcomes:
                assert http.get(f"/v1/scopes/{sid}/artifacts/atomic-memory/{aid}").status_code == 200
                r = http.post(f"/v1/scopes/{sid}/atomic-memory/search", json={"query": token})
                assert [h["artifact_address"]["artifact"]["artifact_id"] for h in r.json()["hits"]] == [aid]


def _prepared(server: LiveServer, sid: str, query: str) -> dict[str, Any]:
    """A prepare's answer with its Receipt, without what differs per call (the Receipt id, stage timings)."""
    body = {"scope_id": sid, "query": query, "include_receipt": True}
    r = httpx.post(f"{server.base_url}/v1/context/prepare", json=body, timeout=60)
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    del answer["receipt"]["receipt_id"]
    for stage in answer["receipt"]["stages"]:
        del stage["duration_ms"]
    return answer


def test_writes_through_one_server_are_read_searched_and_prepared_by_the_other(
    two_servers: tuple[LiveServer, LiveServer],
) -> None:
    """Scaling out: one Server writes, the other answers at once (read-after-write), with equal Receipts."""
    writer, reader = two_servers
    sid = scope_on(writer)
    texts = [f"ledgerword shard {i} moved to the eu region" for i in range(20)] + ["ledgerword rollback runbook"]
    with httpx.Client(base_url=writer.base_url, timeout=60) as http:
        r = http.post(
            f"/v1/scopes/{sid}/atomic-memory/batch", json={"items": [{"text": t, "kind": "fact"} for t in texts]}
        )
        assert r.status_code == 201, r.text
        last = http.post(f"/v1/scopes/{sid}/atomic-memory", json={"text": "ledgerword freeze friday", "kind": "fact"})
        assert last.status_code == 201, last.text
    aid = last.json()["artifact_address"]["artifact"]["artifact_id"]
    with httpx.Client(base_url=reader.base_url, timeout=60) as http:
        assert http.get(f"/v1/scopes/{sid}/artifacts/atomic-memory/{aid}").json()["text"] == "ledgerword freeze friday"
        hits = http.post(f"/v1/scopes/{sid}/atomic-memory/search", json={"query": "freeze friday"}).json()["hits"]
        assert [h["artifact_address"]["artifact"]["artifact_id"] for h in hits][:1] == [aid]
    for query in ("ledgerword rollback", "freeze friday", "eu region shard"):
        seen_by_writer, seen_by_reader = _prepared(writer, sid, query), _prepared(reader, sid, query)
        assert seen_by_reader == seen_by_writer, query
        assert seen_by_reader["status"] == "ready"


def test_compare_and_set_across_servers_has_exactly_one_winner(two_servers: tuple[LiveServer, LiveServer]) -> None:
    first, second = two_servers
    sid = scope_on(second)
    r = httpx.post(f"{first.base_url}/v1/scopes/{sid}/atomic-memory", json={"text": "casword v1", "kind": "fact"})
    aid = r.json()["artifact_address"]["artifact"]["artifact_id"]

    def work(http: httpx.Client, n: int) -> Iterator[int]:
        r = http.put(f"/v1/scopes/{sid}/atomic-memory/{aid}", json={"text": f"casword by {n}", "expected_revision": 1})
        yield (
            r.status_code if r.status_code != 409 else (409 if r.json()["error"]["code"] == "revision-conflict" else -1)
        )

    statuses = Counter(run_writers(two_servers, work))
    assert statuses == {200: 1, 409: 2 * WRITERS - 1}, statuses
    head = httpx.get(f"{second.base_url}/v1/scopes/{sid}/artifacts/atomic-memory/{aid}").json()
    assert head["head_revision"] == 2


def writer_lock_probe(options: dict[str, Any]) -> Callable[[], bool]:
    """A check, on its own session, whether another session holds the store's writer lock right now.

    On a seekdb server every write transaction locks the ``store_locks`` row first (store.py), so "held"
    means some Server is inside a write transaction. ``FOR UPDATE NOWAIT`` answers at once (1205) instead of queueing.
    """
    import pymysql

    conn = pymysql.connect(**options, database="powercontext", autocommit=False, read_timeout=30)

    def held() -> bool:
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT name FROM store_locks WHERE name = 'writer' FOR UPDATE NOWAIT")
        except pymysql.err.OperationalError as exc:
            if exc.args[0] != 1205:  # "Lock wait timeout exceeded": another session holds it
                raise
            conn.rollback()
            return True
        conn.rollback()  # never keep the lock: the probed writer must not wait for this session
        return False

    return held


def batch_items(count: int = 500) -> list[dict[str, Any]]:
    """A batch that takes its writer a while: 40 distinct terms per memory, so the full-text index
    writes ~20,000 postings in the transaction. Ten groups of 50 (``grp<n>x``), so searches of at
    most 50 hits each can count every row of the batch."""
    return [
        {"text": f"killword grp{i % 10}x " + " ".join(f"w{i}t{j}" for j in range(40)), "kind": "fact"}
        for i in range(count)
    ]


def kill_during_batch_leaves_all_or_nothing(
    owner: LiveServer, victim: LiveServer, writer_lock_held: Callable[[], bool]
) -> int:
    """SIGKILL ``victim`` while its 500-memory batch transaction holds the writer lock; then check on
    ``owner`` (same database) that the batch is there whole or not at all, and that the owner still
    serves reads and writes. Returns how many of the batch's memories the owner finds (0 or 500)."""
    sid = scope_on(owner)
    items = batch_items()
    answers: list[httpx.Response] = []
    errors: list[BaseException] = []

    def post() -> None:
        try:
            answers.append(
                httpx.post(f"{victim.base_url}/v1/scopes/{sid}/atomic-memory/batch", json={"items": items}, timeout=120)
            )
        except httpx.HTTPError as exc:  # the Server is killed mid-request
            errors.append(exc)

    assert not writer_lock_held(), "another writer is active before the batch was sent"
    thread = threading.Thread(target=post)
    thread.start()
    # Kill the moment the batch's transaction is seen holding the writer lock (it holds it for the
    # whole transaction, hundreds of ms for this batch), before the answer can be sent.
    deadline = time.monotonic() + 60
    while not writer_lock_held():
        assert thread.is_alive() and time.monotonic() < deadline, f"the batch never took the writer lock: {answers}"
        time.sleep(0.002)
    os.kill(victim.process.pid, signal.SIGKILL)
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert answers == [], f"the batch was answered before the kill landed: {answers[0].status_code}"
    assert errors, "the request neither got an answer nor failed"
    # The engine ends the dead session: its transaction and the writer lock go with it.
    deadline = time.monotonic() + 60
    while writer_lock_held():
        assert time.monotonic() < deadline, "the killed Server's writer lock was never released"
        time.sleep(0.05)
    found = 0
    with httpx.Client(base_url=owner.base_url, timeout=60) as http:
        for group in range(10):
            r = http.post(f"/v1/scopes/{sid}/atomic-memory/search", json={"query": f"grp{group}x", "limit": 50})
            assert r.status_code == 200, r.text
            found += len(r.json()["hits"])
        assert found in (0, 500), found
        r = http.post(f"/v1/scopes/{sid}/atomic-memory", json={"text": "afterkill written", "kind": "fact"})
        assert r.status_code == 201, r.text
        aid = r.json()["artifact_address"]["artifact"]["artifact_id"]
        r = http.post(f"/v1/scopes/{sid}/atomic-memory/search", json={"query": "afterkill"})
        assert [h["artifact_address"]["artifact"]["artifact_id"] for h in r.json()["hits"]] == [aid]
    return found


def engine_writer_lock_probe(engine_dir: Path, victim: LiveServer) -> Callable[[], bool]:
    """A check whether ``victim`` holds the embedded engine's writer lock right now.

    On ``seekdb:///dir`` writers take ``flock`` on a file in the engine directory instead of the ``store_locks``
    row (store/oceanbase/writer_lock.py), for the whole write transaction. The kernel lists every such lock, with
    its owner, in ``/proc/locks``; reading it takes nothing from the writer."""
    lock_file = engine_dir / LOCK_FILE
    assert lock_file.is_file(), f"no writer lock file in {engine_dir}"
    info = lock_file.stat()
    file_id = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"

    owner = str(victim.process.pid)

    def held() -> bool:
        # "1: FLOCK  ADVISORY  WRITE 1234 fe:00:5678 0 EOF"; a lock still waited for has "->" after the number.
        rows = (line.split() for line in Path("/proc/locks").read_text().splitlines())
        return any("->" not in f and f[1:2] == ["FLOCK"] and f[4:6] == [owner, file_id] for f in rows)

    return held


def test_a_server_killed_during_a_batch_leaves_no_partial_batch(tmp_path: Path) -> None:
    require_seekdb()
    engine = new_engine_dir(tmp_path)
    url = f"seekdb://{engine}"
    with (
        live_server(tmp_path, store=url, log_name="owner.log") as owner,
        live_server(tmp_path, store=url, log_name="victim.log") as victim,
    ):
        kill_during_batch_leaves_all_or_nothing(owner, victim, engine_writer_lock_probe(engine, victim))
