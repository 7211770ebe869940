"""One deadline per prepare (``POWERCONTEXT_PREPARE_DEADLINE_MS``): a real Server subprocess whose embedding,
expansion and rerank providers are real fake servers that drip their answers (one byte every half second), each
call with a 2 s timeout. Without the prepare's deadline the three calls ran back to back (6 s and more); with
it, each stage gets what is left, a stage with nothing left is not started, and the Receipt says what ran.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests import forked
from tests.chat_fixture import ChatServer, start_chat_server
from tests.conftest import LiveServer, live_server
from tests.embedding_fixture import EmbeddingServer, start_embedding_server
from tests.support import Api, strict_json

DIM = 32
CALL_TIMEOUT_S = 2.0
DRIP_S = 0.5
# Loopback, a loaded 2-core machine and the Server's own work: the bound asserted is the deadline plus this.
MARGIN_S = 1.0
QUERY = "ledger"
MEMORY_ONLY = {"sections": [{"family": "memory", "limit": 8}]}
TEXTS = ("the ledger settles nightly", "the ledger closes on fridays", "ledger exports go to finance")


@pytest.fixture(scope="module")
def embeddings() -> Iterator[EmbeddingServer]:
    with start_embedding_server(DIM) as server:
        yield server


@pytest.fixture(scope="module")
def chat() -> Iterator[ChatServer]:
    with start_chat_server() as server:
        yield server


def settings(embeddings: EmbeddingServer, chat: ChatServer, deadline_ms: int, cooldown_s: int) -> dict[str, str]:
    return {
        "POWERCONTEXT_EMBEDDINGS": "openai-compatible",
        "POWERCONTEXT_EMBEDDINGS_BASE_URL": embeddings.base_url,
        "POWERCONTEXT_EMBEDDINGS_MODEL": "fake-embed",
        "POWERCONTEXT_EMBEDDINGS_DIMENSION": str(DIM),
        "POWERCONTEXT_EMBEDDINGS_TIMEOUT": str(CALL_TIMEOUT_S),
        "POWERCONTEXT_EMBEDDINGS_COOLDOWN": str(cooldown_s),
        "POWERCONTEXT_GENERATION": "openai-compatible",
        "POWERCONTEXT_GENERATION_BASE_URL": chat.base_url,
        "POWERCONTEXT_GENERATION_MODEL": "gen-model",
        "POWERCONTEXT_GENERATION_TIMEOUT": str(CALL_TIMEOUT_S),
        "POWERCONTEXT_RERANK": "listwise",
        "POWERCONTEXT_EXPANSION": "model",
        "POWERCONTEXT_PREPARE_DEADLINE_MS": str(deadline_ms),
    }


@contextmanager
def seeded_server(
    path: Path, embeddings: EmbeddingServer, chat: ChatServer, deadline_ms: int, cooldown_s: int
) -> Iterator[tuple[LiveServer, Api, str]]:
    """A Server and a Scope whose memories were stored with their vectors (while the provider answered)."""
    embeddings.reset()
    chat.reset()
    with live_server(path, settings(embeddings, chat, deadline_ms, cooldown_s)) as live:
        api = Api(live.base_url)
        try:
            sid = api.new_scope()
            for text in TEXTS:
                api.add(sid, text, "fact")
            yield live, api, sid
        finally:
            api.close()
            embeddings.reset()
            chat.reset()


@pytest.fixture(scope="module")
def three_seconds(
    tmp_path_factory: pytest.TempPathFactory, embeddings: EmbeddingServer, chat: ChatServer
) -> Iterator[tuple[LiveServer, Api, str]]:
    """A 3000 ms deadline; no cool-down, so each prepare asks the embedding provider again."""
    with seeded_server(tmp_path_factory.mktemp("deadline"), embeddings, chat, 3000, 0) as served:
        yield served


def timed_prepare(api: Api, sid: str) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    r = api.prepare(sid, QUERY, assembly=MEMORY_ONLY, include_receipt=True)
    elapsed = time.perf_counter() - started
    assert r.status_code == 200, r.text
    body = strict_json(r.content)
    assert "receipt" in body, "the Receipt was dropped"
    return elapsed, body


def summary(body: dict[str, Any]) -> dict[str, Any]:
    retrieval = body["receipt"]["retrieval"]
    return {
        "searches": [(g["round"], g["mode"], g["fallback_reason"]) for g in retrieval["searches"]],
        "rounds": [(r["round"], r["outcome"], r["retained"]) for r in retrieval["rounds"]],
        "reranks": [(g["outcome"], g["fallback_reason"], g["count"]) for g in retrieval["reranks"]],
        "stages": {s["stage"]: s["count"] for s in body["receipt"]["stages"]},
    }


@pytest.mark.timed
def test_a_deadline_that_runs_out_before_rerank_skips_it(
    three_seconds: tuple[LiveServer, Api, str], embeddings: EmbeddingServer, chat: ChatServer
) -> None:
    """Embedding takes its 2 s timeout, expansion gets the 1 s left, rerank cannot start."""
    live, api, sid = three_seconds
    chat.reset()
    embeddings.control(mode="trickle", trickle_s=DRIP_S)
    chat.control(default={"mode": "trickle", "delay_s": DRIP_S})
    elapsed, body = timed_prepare(api, sid)
    log = live.log_text()
    model_calls = chat.requests()
    embeddings.control(mode="answer")
    print(f"prepare with a 3000 ms deadline answered in {elapsed * 1000:.0f} ms", body["receipt"]["stages"])
    assert elapsed < 3.0 + MARGIN_S, elapsed
    assert model_calls == 1  # the expansion call; the rerank was never sent
    assert summary(body) == {
        "searches": [(0, "fts", "inference_timeout")],
        "rounds": [(0, "completed", True), (1, "expansion_failed", False)],
        "reranks": [],  # no invocation, no group (RFC 1435)
        "stages": {"scope.context": 1, "memory.search": 1, "recall.expand": 1, "context.build": 1},
    }
    assert all(text in body["content"] for text in TEXTS)  # it answers with what it has
    assert "event=rerank.skipped reason=deadline scopes=1" in log


@pytest.mark.timed
def test_a_stage_started_late_gets_only_what_is_left(
    three_seconds: tuple[LiveServer, Api, str], embeddings: EmbeddingServer, chat: ChatServer
) -> None:
    """The embedding answers; expansion takes its 2 s timeout; the rerank starts with 1 s left and is cut off at
    the deadline, not after its own 2 s."""
    _, api, sid = three_seconds
    chat.reset()
    embeddings.control(mode="answer")
    chat.control(default={"mode": "trickle", "delay_s": DRIP_S})
    elapsed, body = timed_prepare(api, sid)
    model_calls = chat.requests()
    print(f"prepare with a 3000 ms deadline, rerank cut off, answered in {elapsed * 1000:.0f} ms")
    assert elapsed < 3.0 + MARGIN_S, elapsed
    assert model_calls == 2
    assert summary(body) == {
        "searches": [(0, "hybrid", "none")],
        "rounds": [(0, "completed", True), (1, "expansion_failed", False)],
        "reranks": [("failed", "inference_timeout", 1)],
        "stages": {"scope.context": 1, "memory.search": 2, "recall.expand": 1, "context.build": 1},
    }
    assert all(text in body["content"] for text in TEXTS)


@pytest.mark.timed
def test_a_deadline_shorter_than_the_embedding_timeout_leaves_the_breaker_closed(
    tmp_path: Path, embeddings: EmbeddingServer, chat: ChatServer
) -> None:
    """The prepare's deadline, not the provider, ended the call: the next prepare asks the provider again
    (a 30 s cool-down would otherwise skip it)."""
    with seeded_server(tmp_path, embeddings, chat, 1500, 30) as (_, api, sid):
        embeddings.control(mode="trickle", trickle_s=DRIP_S)
        chat.control(default={"mode": "trickle", "delay_s": DRIP_S})
        before = embeddings.stats()["requests"]
        elapsed, body = timed_prepare(api, sid)
        again, _ = timed_prepare(api, sid)
        calls = embeddings.stats()["requests"] - before
        model_calls = chat.requests()
    assert elapsed < 1.5 + MARGIN_S and again < 1.5 + MARGIN_S, (elapsed, again)
    assert calls == 2
    assert model_calls == 0  # no time was left to start the expansion or the rerank
    assert summary(body) == {
        "searches": [(0, "fts", "inference_timeout")],
        "rounds": [(0, "completed", True), (1, "expansion_failed", False)],
        "reranks": [],
        "stages": {"scope.context": 1, "memory.search": 1, "context.build": 1},
    }


@pytest.mark.parametrize("value", ["0", "abc", "2.5", "600001"])
def test_a_bad_deadline_stops_the_server_with_one_line(tmp_path: Path, value: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env["POWERCONTEXT_PREPARE_DEADLINE_MS"] = value
    command = [sys.executable, "-m", "powercontext", "server", "run", "--db", str(tmp_path / "x.db")]
    result = forked.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: POWERCONTEXT_PREPARE_DEADLINE_MS must be a whole number of milliseconds from 1 to 600000"
    ]
