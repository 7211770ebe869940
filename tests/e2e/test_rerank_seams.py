"""Injected rerankers, Prompt resolvers and tampering Receipt assemblers, through ``Runtime(...)`` on a real
uvicorn (no monkeypatching): evidence that is missing is never invented, and every validator rule holds."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from powercontext.contract.common import ArtifactAddress, ArtifactRef
from powercontext.contract.receipt import PreparedContextReceipt
from powercontext.prompts.definitions import ResolvedPrompt, compiled_digest, resolve_builtin
from powercontext.prompts.errors import PromptUnavailable
from powercontext.recall.deterministic import LexicalCoverageReranker
from powercontext.recall.rerank import RerankConfigRecord, RerankResult, RerankSession, RerankTask
from powercontext.receipt.assembler import ReceiptEvidence, TraceReceiptAssembler
from powercontext.store.sqlite import SqliteStore
from tests.conftest import StartInProcess
from tests.receipt_digests import expected_config_digest
from tests.support import FOUR_KEYS, REQUEST_ID_HEADER, Api, receipt_bytes, strict_json

QUERY = "deploy pipeline checks"
MEMORY_ONLY = {"sections": [{"family": "memory", "limit": 8}]}


class KeywordReranker:
    """An injected model-backed reranker (it stands in for a decision model): keeps candidates naming zebras."""

    model_backed = True
    prompt_key: str | None = "memory.rerank"
    candidate_limit = 30
    max_requests = 4

    def __init__(self) -> None:
        self.calls = 0
        self.prompts: list[ResolvedPrompt | None] = []

    def evidence(self, prompt: ResolvedPrompt | None) -> RerankConfigRecord | None:
        return RerankConfigRecord("test.keyword.v1", "injected:keyword", {"temperature": 0.0}, 1.0, 4, prompt, True)

    def rerank(self, task: RerankTask, s: RerankSession) -> RerankResult:
        self.calls += 1
        self.prompts.append(task.prompt)
        order = tuple(i for i, c in enumerate(task.candidates) if "zebra" in c.text)
        return RerankResult(order, "selected", "none") if order else RerankResult(None, "fallback", "empty_selection")


class NoEvidence(KeywordReranker):
    def evidence(self, prompt: ResolvedPrompt | None) -> RerankConfigRecord | None:
        return None


class PartialEvidence(KeywordReranker):
    """Declares a model, but its record names none: lacking model metadata never establishes determinism."""

    def evidence(self, prompt: ResolvedPrompt | None) -> RerankConfigRecord | None:
        return RerankConfigRecord("test.keyword.v1", None, {"temperature": 0.0}, 1.0, 4, prompt, True)


class UnlistedSetting(KeywordReranker):
    def evidence(self, prompt: ResolvedPrompt | None) -> RerankConfigRecord | None:
        return RerankConfigRecord("test.keyword.v1", "injected:kw", {"api_base": 1}, 1.0, 4, prompt, True)


def seed(api: Api, references: tuple[str, ...] = ()) -> str:
    sid = api.new_scope(references)
    for i in range(6):
        api.add(sid, f"the deploy pipeline step {i} runs checks" + (" zebra canary" if i % 2 else ""), "fact")
    return sid


def omitted_lines(records: list[logging.LogRecord]) -> list[str]:
    return [r.getMessage() for r in records if "event=context.receipt.omitted" in r.getMessage()]


def custom_prompt(scope_id: str, text: str, revision: int) -> ResolvedPrompt:
    # Built as the Prompt store will (family "prompt" is that store's to add to ArtifactFamily).
    address = ArtifactAddress.model_construct(
        scope_id=scope_id,
        artifact=ArtifactRef.model_construct(family="prompt", artifact_id="memory.rerank", revision=revision),
    )
    return ResolvedPrompt(
        scope_id=scope_id,
        key="memory.rerank",
        definition_version=1,
        builtin_version=1,
        selection="artifact",
        selected_version=revision,
        compiled_digest=compiled_digest("memory.rerank", 1, text),
        artifact_address=address,
        compiled_text=text,
    )


# -- injected rerankers ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("reranker", [NoEvidence, PartialEvidence, UnlistedSetting])
def test_missing_evidence_drops_the_receipt_and_nothing_else(
    inprocess_server: StartInProcess,
    sqlite_store: SqliteStore,
    receipt_log: list[logging.LogRecord],
    reranker: type[KeywordReranker],
) -> None:
    injected = reranker()
    live = inprocess_server(sqlite_store, reranker=injected)
    sid = seed(live.api)
    plain = live.api.prepare(sid, QUERY, assembly=MEMORY_ONLY)
    r = live.api.prepare(sid, QUERY, assembly=MEMORY_ONLY, include_receipt=True)
    assert r.status_code == 200 and set(strict_json(r.content)) == FOUR_KEYS
    assert r.content == plain.content  # the rerank still applied, identically; only the Receipt is gone
    assert strict_json(plain.content)["content"].count("zebra") == 3 and injected.calls == 2
    (line,) = omitted_lines(receipt_log)
    assert "reason=missing_evidence" in line and f"receipt_id={r.headers[REQUEST_ID_HEADER]}" in line


def test_an_injected_reranker_with_evidence_gets_a_receipt(
    inprocess_server: StartInProcess, sqlite_store: SqliteStore
) -> None:
    live = inprocess_server(sqlite_store, reranker=KeywordReranker())
    sid = seed(live.api)
    receipt = strict_json(live.api.prepare(sid, QUERY, assembly=MEMORY_ONLY, include_receipt=True).content)["receipt"]
    (config,) = receipt["retrieval"]["rerank_configs"]
    assert config["model"] == "injected:keyword" and config["non_deterministic"] is True
    assert config["config_id"] == expected_config_digest(config)
    assert receipt["non_deterministic"] is True


def test_scope_prompts_and_their_revisions_change_the_digest(
    inprocess_server: StartInProcess, sqlite_store: SqliteStore
) -> None:
    texts: dict[str, tuple[str, int]] = {}

    def resolve(scope_id: str, key: str) -> ResolvedPrompt:
        if scope_id in texts:
            text, revision = texts[scope_id]
            return custom_prompt(scope_id, text, revision)
        return resolve_builtin(scope_id, key)

    injected = KeywordReranker()
    live = inprocess_server(sqlite_store, reranker=injected, resolve_prompt=resolve)
    ref = seed(live.api)
    sid = seed(live.api, (ref,))
    texts[sid] = ("Rank zebra notes first. CUSTOM-PROMPT-MARKER-1", 1)

    def configs() -> list[dict[str, Any]]:
        r = live.api.prepare(sid, QUERY, assembly=MEMORY_ONLY, include_receipt=True)
        assert "CUSTOM-PROMPT-MARKER" not in r.text
        return list(strict_json(r.content)["receipt"]["retrieval"]["rerank_configs"])

    first = configs()
    by_scope = {c["prompt"]["scope_id"]: c for c in first}
    assert by_scope[sid]["prompt"]["selection"] == "artifact"
    assert by_scope[sid]["prompt"]["artifact_address"]["artifact"] == {
        "family": "prompt",
        "artifact_id": "memory.rerank",
        "revision": 1,
    }
    assert by_scope[ref]["prompt"]["selection"] == "built_in"
    assert by_scope[sid]["config_id"] != by_scope[ref]["config_id"]
    # The Prompt the reranker was invoked with is the one resolved for its Scope.
    assert {p.scope_id: p.selection for p in injected.prompts if p is not None} == {sid: "artifact", ref: "built_in"}

    texts[sid] = ("Rank zebra notes first, newest first. CUSTOM-PROMPT-MARKER-2", 2)
    second = {c["prompt"]["scope_id"]: c for c in configs()}
    assert second[sid]["prompt"]["selected_version"] == 2
    assert second[sid]["config_id"] != by_scope[sid]["config_id"]
    assert second[sid]["config_id"] == expected_config_digest(second[sid])
    assert second[ref]["config_id"] == by_scope[ref]["config_id"]  # the other Scope is untouched


def test_a_prompt_that_cannot_be_honoured_fails_that_scopes_rerank(
    inprocess_server: StartInProcess, sqlite_store: SqliteStore, receipt_log: list[logging.LogRecord]
) -> None:
    def resolve(scope_id: str, key: str) -> ResolvedPrompt:
        raise PromptUnavailable()

    injected = KeywordReranker()
    live = inprocess_server(sqlite_store, reranker=injected, resolve_prompt=resolve)
    sid = seed(live.api)
    search_order = live.api.hit_ids(sid, QUERY)
    r = live.api.prepare(sid, QUERY, assembly=MEMORY_ONLY, include_receipt=True)
    assert r.status_code == 200 and set(strict_json(r.content)) == FOUR_KEYS
    assert injected.calls == 0  # never invoked with another Prompt
    content = strict_json(r.content)["content"]
    positions = [content.index(artifact_id) for artifact_id in search_order]
    assert positions == sorted(positions)  # the coarse order
    (line,) = omitted_lines(receipt_log)
    assert "reason=prompt_unavailable" in line


def test_deterministic_reranker_invocations_share_one_config(
    inprocess_server: StartInProcess, sqlite_store: SqliteStore
) -> None:
    live = inprocess_server(sqlite_store, reranker=LexicalCoverageReranker())
    ref = seed(live.api)
    sid = seed(live.api, (ref,))
    receipt = strict_json(live.api.prepare(sid, QUERY, assembly=MEMORY_ONLY, include_receipt=True).content)["receipt"]
    (config,) = receipt["retrieval"]["rerank_configs"]
    assert config["policy_id"] == "powercontext.memory.rerank.lexical-coverage.v1"
    assert config["model"] is None and config["prompt"] is None and config["non_deterministic"] is False
    assert config["effective_settings"] == {"candidate_limit": 30, "coverage_weight": 0.5}
    assert config["config_id"] == expected_config_digest(config)
    assert receipt["retrieval"]["reranks"] == [
        {"round": 0, "config_id": config["config_id"], "outcome": "selected", "fallback_reason": "none", "count": 2}
    ]
    assert receipt["non_deterministic"] is False


# -- every validator rule, through an assembler that breaks it ----------------------------------------------------


class Breaking:
    """Assembles the honest Receipt as wire data, breaks one rule, and returns it as a (valid-schema) model."""

    def __init__(self, breaker: Any) -> None:
        self.breaker = breaker

    def assemble(self, evidence: ReceiptEvidence) -> PreparedContextReceipt:
        data = TraceReceiptAssembler().assemble(evidence).model_dump(mode="json", by_alias=True)
        self.breaker(data)
        return PreparedContextReceipt.model_validate(data)


def _recomputed(config: dict[str, Any]) -> None:
    config["config_id"] = config["config_digest"] = expected_config_digest(config)


def unknown_group_config(d: dict[str, Any]) -> None:
    d["retrieval"]["reranks"][0]["config_id"] = "sha256:" + "1" * 64


def unused_config(d: dict[str, Any]) -> None:
    extra = {**d["retrieval"]["rerank_configs"][0], "max_requests": 99}
    _recomputed(extra)
    d["retrieval"]["rerank_configs"] = sorted([*d["retrieval"]["rerank_configs"], extra], key=lambda c: c["config_id"])


def stale_digest(d: dict[str, Any]) -> None:
    d["retrieval"]["rerank_configs"][0]["effective_settings"]["temperature"] = 0.7


def unlisted_setting(d: dict[str, Any]) -> None:
    config = d["retrieval"]["rerank_configs"][0]
    config["effective_settings"]["api_base"] = 1
    old = config["config_id"]
    _recomputed(config)
    d["retrieval"]["reranks"][0]["config_id"] = config["config_id"]
    assert old != config["config_id"]


def deterministic_model(d: dict[str, Any]) -> None:
    d["retrieval"]["rerank_configs"][0]["non_deterministic"] = False


def deterministic_receipt(d: dict[str, Any]) -> None:
    d["non_deterministic"] = False


def wrong_query_digest(d: dict[str, Any]) -> None:
    d["query_digest"] = "sha256:" + "2" * 64


def wrong_max_bytes(d: dict[str, Any]) -> None:
    d["requested_max_bytes"] += 1


def split_search_group(d: dict[str, Any]) -> None:
    searches = d["retrieval"]["searches"]
    searches.append(dict(searches[0]))


def split_rerank_group(d: dict[str, Any]) -> None:
    d["retrieval"]["reranks"].append(dict(d["retrieval"]["reranks"][0]))


def none_mode_completed(d: dict[str, Any]) -> None:
    d["retrieval"]["searches"][0]["mode"] = "none"


def retained_failed_round(d: dict[str, Any]) -> None:
    d["retrieval"]["rounds"].append({"round": 1, "outcome": "expansion_failed", "retained": True})


def unknown_stage(d: dict[str, Any]) -> None:
    d["stages"][0]["stage"] = "memory.secret_stage"


def wrong_omission_count(d: dict[str, Any]) -> None:
    d["omitted"][0]["count"] += 1


RULES = {
    unknown_group_config: "rerank_group_mismatch",
    unused_config: "rerank_group_mismatch",
    stale_digest: "config_digest_mismatch",
    unlisted_setting: "unrepresentable_config",
    deterministic_model: "non_deterministic_mismatch",
    deterministic_receipt: "non_deterministic_mismatch",
    wrong_query_digest: "query_digest_mismatch",
    wrong_max_bytes: "requested_max_bytes_mismatch",
    split_search_group: "search_group_mismatch",
    split_rerank_group: "rerank_group_mismatch",
    none_mode_completed: "search_group_mismatch",
    retained_failed_round: "round_mismatch",
    unknown_stage: "stage_mismatch",
    wrong_omission_count: "omission_mismatch",
}


@pytest.mark.parametrize(("breaker", "reason"), RULES.items(), ids=[b.__name__ for b in RULES])
def test_each_validator_rule(
    inprocess_server: StartInProcess,
    sqlite_store: SqliteStore,
    receipt_log: list[logging.LogRecord],
    breaker: Any,
    reason: str,
) -> None:
    live = inprocess_server(sqlite_store, reranker=KeywordReranker(), receipt_assembler=Breaking(breaker))
    sid = seed(live.api)
    plain = live.api.prepare(sid, QUERY, assembly=MEMORY_ONLY)
    r = live.api.prepare(sid, QUERY, assembly=MEMORY_ONLY, include_receipt=True)
    assert r.status_code == 200 and r.content == plain.content
    (line,) = omitted_lines(receipt_log)
    assert f"reason={reason} " in line
    for marker in ("deploy", "zebra", sid):
        assert marker not in line


def test_the_honest_assembler_passes_the_same_rules(
    inprocess_server: StartInProcess, sqlite_store: SqliteStore, receipt_log: list[logging.LogRecord]
) -> None:
    live = inprocess_server(sqlite_store, reranker=KeywordReranker(), receipt_assembler=Breaking(lambda d: None))
    sid = seed(live.api)
    r = live.api.prepare(sid, QUERY, assembly=MEMORY_ONLY, include_receipt=True)
    assert "receipt" in strict_json(r.content) and omitted_lines(receipt_log) == []


# -- the byte budget ---------------------------------------------------------------------------------------------


class LongPolicy(KeywordReranker):
    """Valid, complete evidence whose policy id is as long as the test needs (to size the Receipt)."""

    policy_length = 0

    def evidence(self, prompt: ResolvedPrompt | None) -> RerankConfigRecord | None:
        policy = "test.policy." + "p" * self.policy_length
        return RerankConfigRecord(policy, "injected:keyword", {"temperature": 0.0}, 1.0, 4, prompt, True)


def test_the_published_receipt_bound_is_the_one_enforced(
    inprocess_server: StartInProcess, sqlite_store: SqliteStore, receipt_log: list[logging.LogRecord]
) -> None:
    reranker = LongPolicy()
    live = inprocess_server(sqlite_store, reranker=reranker)
    bound = live.api.get("/v1/capabilities").json()["limits"]["receipt_max_bytes"]
    sid = seed(live.api)
    base = live.api.prepare(sid, QUERY, assembly=MEMORY_ONLY, include_receipt=True)
    size = len(receipt_bytes(base.content))
    # Stage durations vary by a few digits between prepares: 64 bytes either side of the bound is decisive.
    reranker.policy_length = bound - size + 64
    over = live.api.prepare(sid, QUERY, assembly=MEMORY_ONLY, include_receipt=True)
    assert set(strict_json(over.content)) == FOUR_KEYS
    (line,) = omitted_lines(receipt_log)
    assert "reason=byte_overflow" in line
    reranker.policy_length = bound - size - 64
    under = live.api.prepare(sid, QUERY, assembly=MEMORY_ONLY, include_receipt=True)
    assert bound - 128 < len(receipt_bytes(under.content)) <= bound


class Raising(KeywordReranker):
    def rerank(self, task: RerankTask, s: RerankSession) -> RerankResult:
        raise RuntimeError(f"reranker bug on {task.query!r}")


def test_a_reranker_that_raises_keeps_the_coarse_order(
    inprocess_server: StartInProcess, sqlite_store: SqliteStore, receipt_log: list[logging.LogRecord]
) -> None:
    live = inprocess_server(sqlite_store, reranker=Raising())
    sid = seed(live.api)
    order = live.api.hit_ids(sid, QUERY)
    r = live.api.prepare(sid, QUERY, assembly=MEMORY_ONLY, include_receipt=True)
    assert r.status_code == 200 and set(strict_json(r.content)) == FOUR_KEYS
    content = strict_json(r.content)["content"]
    assert [content.index(a) for a in order] == sorted(content.index(a) for a in order)
    (line,) = omitted_lines(receipt_log)
    assert "reason=missing_evidence" in line and "deploy" not in line


def test_include_receipt_adds_no_searches_with_rerank_and_expansion(
    inprocess_server: StartInProcess, sqlite_store: SqliteStore
) -> None:
    from powercontext.recall.expansion import WidenExpander
    from tests.conftest import CountingStore

    store = CountingStore(sqlite_store)
    injected = KeywordReranker()
    live = inprocess_server(store, reranker=injected, expander=WidenExpander())
    sid = seed(live.api)

    def calls(**flag: Any) -> tuple[dict[str, int], int, bytes]:
        before, reranks = store.snapshot(), injected.calls
        r = live.api.prepare(sid, "zebra", **flag)
        after = store.snapshot()
        return {k: after[k] - before[k] for k in after if after[k] != before[k]}, injected.calls - reranks, r.content

    plain_calls, plain_reranks, plain = calls()
    receipt_calls, receipt_reranks, with_receipt = calls(include_receipt=True)
    assert plain_calls["search_text"] >= 2  # round 0 and at least one widened round
    assert (receipt_calls, receipt_reranks) == (plain_calls, plain_reranks) == (plain_calls, 1)
    body = strict_json(with_receipt)
    assert {k: body[k] for k in FOUR_KEYS} == strict_json(plain)
    assert [r["round"] for r in body["receipt"]["retrieval"]["rounds"]][:2] == [0, 1]
