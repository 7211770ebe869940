"""SIGKILL the Server while eight compare-and-set revisers race on one memory, on both stores.

Each reviser reads the head and revises it with ``expected_revision``; a 409 means another won that revision.
After every kill and restart: one write succeeds within 15 s, the revisions run 1..head without a gap, every
acknowledged revise is the stored text of the revision it was answered with (exactly one winner each), and no
revision holds a text that was never sent.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.faults.support import create_scope, start, store_url, write_one
from tests.support import TLS, unique

KILLS = 2
REVISERS = 8


def revise_until_stopped(
    url: str, scope_id: str, artifact_id: str, name: str, won: dict[int, str], problems: list[str]
) -> None:
    """Revise the memory again and again; record each acknowledged revision (number → text), and anything
    wrong in ``problems`` (an assertion in a thread would not fail the test)."""
    path = f"/v1/scopes/{scope_id}/atomic-memory/{artifact_id}"
    n = 0
    with httpx.Client(base_url=url, verify=TLS, timeout=30) as http:
        while True:
            try:
                head = http.get(f"/v1/scopes/{scope_id}/artifacts/atomic-memory/{artifact_id}")
                if head.status_code != 200:
                    return
                expected = head.json()["head_revision"]
                text = f"{name} attempt {n}"
                n += 1
                r = http.put(path, json={"text": text, "expected_revision": expected})
            except httpx.TransportError:
                return  # the Server was killed
            if r.status_code == 200:
                revision = r.json()["head_revision"]
                if revision != expected + 1 or revision in won:
                    problems.append(f"revision {revision} acknowledged twice or out of turn")
                won[revision] = text
            elif r.status_code != 409 or r.json()["error"]["code"] != "revision-conflict":
                problems.append(f"{r.status_code} {r.text[:200]}")


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "seekdb"])
def test_kills_during_compare_and_set_revisions_keep_one_winner_each(backend: str, tmp_path: Path) -> None:
    store = store_url(backend, tmp_path)
    server = start(store, tmp_path / "server-0.log")
    scope_id = unique("cas")
    try:
        create_scope(server.url, scope_id)
        created = write_one(server.url, scope_id, "cas revision 1")
        assert created.status_code == 201, created.text
        artifact_id = created.json()["artifact_address"]["artifact"]["artifact_id"]
        won: dict[int, str] = {1: "cas revision 1"}
        problems: list[str] = []
        for k in range(KILLS):
            threads = [
                threading.Thread(
                    target=revise_until_stopped, args=(server.url, scope_id, artifact_id, f"k{k}r{r}", won, problems)
                )
                for r in range(REVISERS)
            ]
            for thread in threads:
                thread.start()
            time.sleep(1.5)
            server.kill()
            for thread in threads:
                thread.join(timeout=60)
            server = start(store, tmp_path / f"server-{k + 1}.log")
            after = write_one(server.url, scope_id, f"written after restart {k + 1}")
            assert after.status_code == 201, f"restart {k + 1}: {after.status_code} {after.text}\n{server.events()}"
        with httpx.Client(base_url=server.url, verify=TLS, timeout=30) as http:
            head = http.get(f"/v1/scopes/{scope_id}/artifacts/atomic-memory/{artifact_id}").json()["head_revision"]
            stored = {}
            for revision in range(1, head + 1):
                r = http.get(f"/v1/scopes/{scope_id}/artifacts/atomic-memory/{artifact_id}/revisions/{revision}")
                assert r.status_code == 200, f"revision {revision} of {head} is missing: {r.text}"
                stored[revision] = r.json()["text"]
    finally:
        server.stop()
    assert problems == []
    assert head > KILLS, "the revisers never got going"
    for revision, text in won.items():
        assert stored[revision] == text, f"revision {revision} was acknowledged with another text"
    # A revision answered by no one (its answer lost in the kill) still holds a text a reviser sent.
    assert all(text == "cas revision 1" or " attempt " in text for text in stored.values())
