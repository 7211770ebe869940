"""The in-process server seam: a counting Store and faulty receipt assemblers, injected through
``Runtime(...)`` (no monkeypatching), served by a real uvicorn on loopback."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest

from powercontext.contract.common import ArtifactAddress, ArtifactRef
from powercontext.contract.receipt import (
    PreparedContextReceipt,
    RerankConfig,
    SelectedArtifact,
    StageTiming,
)
from powercontext.receipt.assembler import ReceiptEvidence, TraceReceiptAssembler
from powercontext.store.base import Store
from powercontext.store.sqlite import SqliteStore
from tests.conftest import CountingStore, StartInProcess
from tests.support import FOUR_KEYS, REQUEST_ID_HEADER, Api, receipt_bytes, strict_json

SECRET_QUERY = "PELICAN-QUERY-MARKER-5521 why sqlite"
SECRET_BODY = "PELICAN-BODY-MARKER-9913 sqlite was chosen for embedding"


def seed(api: Api, references: int = 0) -> str:
    refs = [api.new_scope() for _ in range(references)]
    sid = api.new_scope(refs)
    for scope_id in (sid, *refs):
        api.add(scope_id, SECRET_BODY, "decision")
        api.add(scope_id, "sqlite uses WAL so readers never block the writer", "fact")
    return sid


# -- include_receipt costs no extra store work --------------------------------------------------


@pytest.mark.parametrize("references", [0, 2])
def test_include_receipt_makes_no_extra_store_calls(
    inprocess_server: StartInProcess, sqlite_store: SqliteStore, references: int
) -> None:
    store = CountingStore(sqlite_store)
    live = inprocess_server(store)
    sid = seed(live.api, references)

    def prepare(flag: dict[str, Any]) -> tuple[bytes, dict[str, int]]:
        before = store.snapshot()
        r = live.api.prepare(sid, "why sqlite", max_bytes=8000, **flag)
        assert r.status_code == 200, r.text
        after = store.snapshot()
        return r.content, {k: after[k] - before[k] for k in after if after[k] != before[k]}

    plain_body, plain_calls = prepare({})
    receipt_body, receipt_calls = prepare({"include_receipt": True})
    false_body, false_calls = prepare({"include_receipt": False})
    assert plain_calls["search_text"] == 1 + references  # one search per Scope, nothing more
    assert receipt_calls == plain_calls == false_calls
    plain, with_receipt = strict_json(plain_body), strict_json(receipt_body)
    assert "receipt" in with_receipt
    assert {k: with_receipt[k] for k in FOUR_KEYS} == plain
    assert with_receipt["content"].encode("utf-8") == plain["content"].encode("utf-8")
    assert false_body == plain_body


# -- fail-open -----------------------------------------------------------------------------------


class RaisingAssembler:
    """Fails like a buggy assembler whose exception message carries request content."""

    def assemble(self, evidence: ReceiptEvidence) -> PreparedContextReceipt:
        raise RuntimeError(f"assembler bug while handling {evidence.query!r}")


class ReturnsNothing:
    """Returns something that is not a Receipt at all."""

    def assemble(self, evidence: ReceiptEvidence) -> PreparedContextReceipt:
        return None  # type: ignore[return-value]


class _Tampering:
    def __init__(self) -> None:
        self.inner = TraceReceiptAssembler()

    def assemble(self, evidence: ReceiptEvidence) -> PreparedContextReceipt:
        return self.tamper(self.inner.assemble(evidence), evidence)

    def tamper(self, receipt: PreparedContextReceipt, evidence: ReceiptEvidence) -> PreparedContextReceipt:
        raise NotImplementedError


class WrongReceiptId(_Tampering):
    def tamper(self, receipt: PreparedContextReceipt, evidence: ReceiptEvidence) -> PreparedContextReceipt:
        return receipt.model_copy(update={"receipt_id": str(uuid.uuid4())})


class ExtraSelectedItem(_Tampering):
    def tamper(self, receipt: PreparedContextReceipt, evidence: ReceiptEvidence) -> PreparedContextReceipt:
        extra = SelectedArtifact(
            family="atomic-memory",
            artifact_address=ArtifactAddress(
                scope_id=receipt.selected[0].artifact_address.scope_id,  # type: ignore[union-attr]
                artifact=ArtifactRef(family="atomic-memory", artifact_id="am_invented", revision=1),
            ),
            rendered_bytes=100,
            truncated=False,
        )
        return receipt.model_copy(update={"selected": [*receipt.selected, extra]})


class ReorderedSelected(_Tampering):
    def tamper(self, receipt: PreparedContextReceipt, evidence: ReceiptEvidence) -> PreparedContextReceipt:
        assert len(receipt.selected) >= 2
        return receipt.model_copy(update={"selected": list(reversed(receipt.selected))})


class MissingSelectedItem(_Tampering):
    def tamper(self, receipt: PreparedContextReceipt, evidence: ReceiptEvidence) -> PreparedContextReceipt:
        return receipt.model_copy(update={"selected": receipt.selected[:-1]})


class WrongContentDigest(_Tampering):
    def tamper(self, receipt: PreparedContextReceipt, evidence: ReceiptEvidence) -> PreparedContextReceipt:
        return receipt.model_copy(update={"content_digest": "sha256:" + "0" * 64})


class WrongUsedBytes(_Tampering):
    def tamper(self, receipt: PreparedContextReceipt, evidence: ReceiptEvidence) -> PreparedContextReceipt:
        return receipt.model_copy(update={"used_bytes": receipt.used_bytes + 1})


class TooManyStages(_Tampering):
    def tamper(self, receipt: PreparedContextReceipt, evidence: ReceiptEvidence) -> PreparedContextReceipt:
        stages = [StageTiming(stage=f"stage.{i}", duration_ms=0.0, count=1) for i in range(9)]
        return receipt.model_copy(update={"stages": stages})


class OversizedReceipt(_Tampering):
    """Valid counts, but the serialized Receipt is over 8,192 bytes."""

    def tamper(self, receipt: PreparedContextReceipt, evidence: ReceiptEvidence) -> PreparedContextReceipt:
        digest = "sha256:" + "a" * 64
        config = RerankConfig(
            config_id=digest,
            policy_id="p",
            model=None,
            effective_settings={f"s{i}": "v" * 90 for i in range(100)},
            timeout_seconds=1.0,
            max_requests=1,
            config_digest=digest,
            prompt=None,
            non_deterministic=False,
        )
        retrieval = receipt.retrieval.model_copy(update={"rerank_configs": [config]})
        return receipt.model_copy(update={"retrieval": retrieval})


class WrongTruncatedFlag(_Tampering):
    def tamper(self, receipt: PreparedContextReceipt, evidence: ReceiptEvidence) -> PreparedContextReceipt:
        return receipt.model_copy(update={"truncated": not receipt.truncated})


FAULTY = [
    RaisingAssembler,
    ReturnsNothing,
    WrongReceiptId,
    ExtraSelectedItem,
    ReorderedSelected,
    MissingSelectedItem,
    WrongContentDigest,
    WrongUsedBytes,
    TooManyStages,
    OversizedReceipt,
    WrongTruncatedFlag,
]


@pytest.mark.parametrize("assembler", FAULTY, ids=[a.__name__ for a in FAULTY])
def test_receipt_failure_fails_open(
    inprocess_server: StartInProcess,
    sqlite_store: SqliteStore,
    receipt_log: list[logging.LogRecord],
    assembler: type,
) -> None:
    live = inprocess_server(sqlite_store, receipt_assembler=assembler())
    sid = seed(live.api)
    plain = live.api.prepare(sid, SECRET_QUERY, max_bytes=8000)
    assert plain.status_code == 200
    assert strict_json(plain.content)["status"] == "ready"
    assert receipt_log == [], "no diagnostic without the flag"

    r = live.api.prepare(sid, SECRET_QUERY, max_bytes=8000, include_receipt=True)
    assert r.status_code == 200
    body = strict_json(r.content)
    assert set(body) == FOUR_KEYS  # the Receipt is omitted, not null
    assert r.content == plain.content  # exactly the PreparedContext that would have been returned
    omitted = [rec for rec in receipt_log if "event=context.receipt.omitted" in rec.getMessage()]
    assert len(omitted) == 1 and len(receipt_log) == 1
    line = omitted[0].getMessage()
    assert f"receipt_id={r.headers[REQUEST_ID_HEADER]}" in line
    for marker in ("PELICAN", "sqlite", "embedding", sid):
        assert marker not in line, "the diagnostic is content-free"
    assert omitted[0].levelno >= logging.WARNING


def test_valid_injected_assembler_passes(
    inprocess_server: StartInProcess, sqlite_store: SqliteStore, receipt_log: list[logging.LogRecord]
) -> None:
    """The same seam with an honest assembler returns a Receipt: the failures above are the tampering."""
    live = inprocess_server(sqlite_store, receipt_assembler=TraceReceiptAssembler())
    sid = seed(live.api)
    r = live.api.prepare(sid, SECRET_QUERY, include_receipt=True)
    body = strict_json(r.content)
    assert set(body) == FOUR_KEYS | {"receipt"}
    assert body["receipt"]["receipt_id"] == r.headers[REQUEST_ID_HEADER]
    # How many pass the relevance floor is the ranking's business; the decision that names the query is one.
    assert 1 <= len(body["receipt"]["selected"]) <= 2
    assert receipt_log == []
    assert len(receipt_bytes(r.content)) <= 8192


def test_readiness_follows_the_store(inprocess_server: StartInProcess, sqlite_store: SqliteStore) -> None:
    live = inprocess_server(sqlite_store)
    ready = live.api.http.get("/health/ready")
    assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
    sqlite_store.close()  # the store going away (as at shutdown) must show on the readiness probe
    gone = live.api.http.get("/health/ready")
    assert (gone.status_code, gone.json()["status"]) == (503, "not_ready")
    assert gone.json()["reason"] == "store-unavailable"  # and it says why, in a stable code
    assert live.api.http.get("/health/live").status_code == 200


# -- deduplication ---------------------------------------------------------------------------------


class RepeatingStore(CountingStore):
    """A backend whose full-text search returns every hit twice (as a union of two indexes could)."""

    def search_text(self, scope_id: str, terms: Any, limit: int) -> Any:
        hits = self.inner.search_text(scope_id, terms, limit)
        return [hit for hit in hits for _ in range(2)]


def test_repeated_identities_are_injected_once_and_counted_as_duplicates(
    inprocess_server: StartInProcess, sqlite_store: SqliteStore
) -> None:
    live = inprocess_server(RepeatingStore(sqlite_store))
    sid = live.api.new_scope()
    first = live.api.add(sid, "dedupword: the ledger is append-only", "constraint")
    second = live.api.add(sid, "dedupword: reconciliation runs nightly", "fact")
    r = live.api.prepare(sid, "dedupword", include_receipt=True)
    assert r.status_code == 200, r.text
    body = strict_json(r.content)
    selected = [s["artifact_address"] for s in body["receipt"]["selected"]]
    assert sorted(a["artifact"]["artifact_id"] for a in selected) == sorted(
        m["artifact_address"]["artifact"]["artifact_id"] for m in (first, second)
    )
    assert body["content"].count("dedupword") == 2
    assert {"family": "atomic-memory", "reason": "duplicate", "count": 2} in body["receipt"]["omitted"]


# -- a backend without the other families ----------------------------------------------------------


class AtomicOnlyStore(CountingStore):
    """A backend that implements only the ``Store`` protocol (no Topic Memory, Experience, Profile or code)."""

    def __getattr__(self, name: str) -> Any:
        if name not in Store.__dict__:
            raise AttributeError(name)
        return super().__getattr__(name)


def test_a_requested_family_without_a_reader_is_not_run(
    inprocess_server: StartInProcess, sqlite_store: SqliteStore
) -> None:
    live = inprocess_server(AtomicOnlyStore(sqlite_store))
    sid = live.api.new_scope()
    live.api.add(sid, "readerword memory", "fact")
    r = live.api.prepare(sid, "readerword", include_receipt=True, include_code=True)
    assert r.status_code == 200, r.text
    receipt = strict_json(r.content)["receipt"]
    groups = {(g["family"], g["mode"], g["outcome"]): g["count"] for g in receipt["retrieval"]["searches"]}
    assert groups == {
        ("atomic-memory", "fts", "completed"): 1,
        ("topic-memory", "none", "not_run"): 1,
        ("experience", "none", "not_run"): 1,
        ("code", "none", "not_run"): 1,
    }
    flags = {g["family"] for g in receipt["omitted"] if g["reason"] == "not_retrieved"}
    assert flags == {"topic-memory", "experience", "code"}
    assert live.api.get("/v1/capabilities").json()["families"] == ["atomic-memory"]
