"""Every field of a Receipt is checked against what the prepare recorded: an assembler injected through
``Runtime(receipt_assembler=...)`` (a real uvicorn, real SQLite) tampers with the honest Receipt, and whatever it
changes, the Server drops the Receipt and returns the same content (fail-open).

One test changes each field of the Receipt once; a property test (hypothesis) draws the field and the change
(another value, a shifted number, a flipped flag, a dropped, duplicated, reordered or invented list entry).
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from powercontext.contract.receipt import PreparedContextReceipt
from powercontext.prompts.definitions import ResolvedPrompt
from powercontext.recall.expansion import WidenExpander
from powercontext.recall.rerank import RerankConfigRecord, RerankResult, RerankSession, RerankTask
from powercontext.receipt.assembler import ReceiptEvidence, TraceReceiptAssembler
from powercontext.runtime import Runtime
from powercontext.server.app import create_app
from powercontext.store.sqlite import SqliteStore
from tests.support import FOUR_KEYS, Api, free_port, strict_json, wait_until

QUERY = "deploy pipeline checks"

# Other values a string field may take (so most tamperings stay within the schema and reach the validator).
ALTERNATIVES: dict[str, list[str]] = {
    "outcome": ["completed", "expansion_failed", "not_run", "failed", "selected", "fallback"],
    "fallback_reason": [
        *("none", "inference_unavailable", "inference_timeout"),
        *("reused_fts_fallback", "empty_selection", "invalid_output"),
    ],
    "mode": ["fts", "vector", "hybrid", "snapshot", "code", "none"],
    "family": ["atomic-memory", "topic-memory", "experience", "profile", "code"],
    "reason": [
        *("duplicate", "blank", "family_limit", "entry_limit"),
        *("below_min_bytes", "no_fitting_truncation", "rerank_not_selected", "not_retrieved"),
    ],
    "stage": [
        *("scope.context", "memory.search", "topic_memory.search", "experience.search"),
        *("profile.read", "code.query", "recall.expand", "context.build"),
    ],
    "selection": ["built_in", "artifact"],
}


class ModelLikeReranker:
    """An injected model-backed reranker (its evidence names a model and a Prompt): keeps zebra candidates."""

    model_backed = True
    prompt_key: str | None = "memory.rerank"
    candidate_limit = 30
    max_requests = 4

    def evidence(self, prompt: ResolvedPrompt | None) -> RerankConfigRecord | None:
        return RerankConfigRecord("test.keyword.v1", "injected:keyword", {"temperature": 0.0}, 1.0, 4, prompt, True)

    def rerank(self, task: RerankTask, s: RerankSession) -> RerankResult:
        order = tuple(i for i, c in enumerate(task.candidates) if "zebra" in c.text)
        return RerankResult(order, "selected", "none") if order else RerankResult(None, "fallback", "empty_selection")


@dataclass(frozen=True)
class Tampering:
    """Which field (an index into the Receipt's paths, modulo their number) and how to change it."""

    where: int
    how: int = 0
    delta: int = 1
    scale: float = 1.5
    text: str = "x"


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every field of a JSON value, containers included, in a stable order."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key in sorted(value):
            found += paths(value[key], (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += paths(item, (*prefix, i))
    return found


def changed(key: Any, value: Any, t: Tampering) -> Any:
    """``value`` changed as ``t`` says (``key`` names the field, for plausible alternatives)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + (t.delta or 1)
    if isinstance(value, float):
        return value * t.scale + 0.001 if value else 0.25 * t.scale
    if isinstance(value, str):
        options = [o for o in ALTERNATIVES.get(key, []) if o != value]
        if options:
            return options[t.how % len(options)]
        if value.startswith("sha256:"):
            return "sha256:" + hashlib.sha256((value + t.text).encode()).hexdigest()
        return value + t.text
    if value is None:
        return t.text
    if isinstance(value, list):
        return changed_list(value, t)
    return {**value, "invented": t.text}  # a dict: an unknown field


def changed_list(value: list[Any], t: Tampering) -> list[Any]:
    """Drop, duplicate, reorder or invent an entry (invented: a copy of one with a number shifted)."""
    if not value:
        return [{"round": 1, "outcome": "completed", "retained": True}]
    i = t.how % len(value)
    op = (t.how // len(value)) % 4
    if op == 0:
        return value[:i] + value[i + 1 :]
    if op == 1:
        return [*value[: i + 1], copy.deepcopy(value[i]), *value[i + 1 :]]
    if op == 2 and len(value) > 1 and value[0] != value[-1]:
        return value[::-1]
    invented = copy.deepcopy(value[i])
    ints = [p for p in paths(invented) if type(_get(invented, p)) is int]
    if ints:
        _set(invented, ints[0], _get(invented, ints[0]) + 1)
    return [*value, invented]


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _set(value: Any, path: tuple[Any, ...], new: Any) -> None:
    _get(value, path[:-1])[path[-1]] = new


def canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True)


class TamperingAssembler:
    """Assembles the honest Receipt, then applies the current ``plan`` (None: honest)."""

    def __init__(self) -> None:
        self.plan: Tampering | None = None
        self.last: tuple[tuple[Any, ...], bool] | None = None  # (path changed, whether the JSON changed)
        self.path_count = 0
        self._lock = threading.Lock()

    def assemble(self, evidence: ReceiptEvidence) -> PreparedContextReceipt:
        honest = TraceReceiptAssembler().assemble(evidence).model_dump(mode="json", by_alias=True)
        found = paths(honest)
        with self._lock:
            self.path_count = len(found)
            plan = self.plan
        if plan is None:
            return PreparedContextReceipt.model_validate(honest)
        data = copy.deepcopy(honest)
        path = found[plan.where % len(found)]
        _set(data, path, changed(path[-1], _get(data, path), plan))
        with self._lock:
            self.last = (path, canonical(data) != canonical(honest))
        return PreparedContextReceipt.model_validate(data)  # a schema violation is caught as well


@dataclass
class Served:
    api: Api
    assembler: TamperingAssembler
    scope_id: str
    content: bytes  # the honest response without a Receipt


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    import uvicorn

    assembler = TamperingAssembler()
    store = SqliteStore(Path(tmp_path_factory.mktemp("tamper")) / "tamper.db")
    runtime = Runtime(store, reranker=ModelLikeReranker(), expander=WidenExpander(), receipt_assembler=assembler)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(runtime), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    assert wait_until(lambda: server.started, timeout=20)
    api = Api(f"http://127.0.0.1:{port}")
    try:
        ref = seed(api, ())
        sid = seed(api, (ref,))
        plain = api.prepare(sid, QUERY)
        assert plain.status_code == 200
        honest = strict_json(api.prepare(sid, QUERY, include_receipt=True).content)
        assert set(honest) == {*FOUR_KEYS, "receipt"}
        retrieval = honest["receipt"]["retrieval"]
        # A Receipt with something in every part: two rounds, several search groups, a rerank config and group.
        assert len(retrieval["rounds"]) >= 2 and retrieval["rerank_configs"] and honest["receipt"]["omitted"]
        yield Served(api, assembler, sid, plain.content)
    finally:
        api.close()
        server.should_exit = True
        thread.join(timeout=15)


def seed(api: Api, references: tuple[str, ...]) -> str:
    sid = api.new_scope(references)
    for i in range(6):
        api.add(sid, f"the deploy pipeline step {i} runs checks" + (" zebra canary" if i % 2 else ""), "fact")
    r = api.http.post(
        f"/v1/scopes/{sid}/topic-memory", json={"title": "deploy pipeline", "body": "how the deploy checks run"}
    )
    assert r.status_code == 201, r.text
    return sid


@pytest.fixture
def omissions() -> Iterator[list[str]]:
    logger = logging.getLogger("powercontext.receipt")
    lines: list[str] = []

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler = Handler()
    logger.addHandler(handler)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)


def tampered_prepare(served: Served, plan: Tampering) -> tuple[dict[str, Any], tuple[Any, ...], bool]:
    served.assembler.plan = plan
    try:
        r = served.api.prepare(served.scope_id, QUERY, include_receipt=True)
    finally:
        served.assembler.plan = None
    assert r.status_code == 200, r.text
    assert served.assembler.last is not None
    path, differs = served.assembler.last
    return strict_json(r.content), path, differs


def assert_caught(served: Served, body: dict[str, Any], path: tuple[Any, ...], lines: list[str]) -> None:
    assert "receipt" not in body, f"a Receipt changed at {path} was returned"
    assert body == strict_json(served.content)  # the content is unchanged
    assert any("event=context.receipt.omitted" in line for line in lines)


def test_the_honest_receipt_passes(served: Served) -> None:
    body = strict_json(served.api.prepare(served.scope_id, QUERY, include_receipt=True).content)
    assert "receipt" in body


def test_a_change_to_any_single_field_drops_the_receipt(served: Served, omissions: list[str]) -> None:
    served.api.prepare(served.scope_id, QUERY, include_receipt=True)
    count = served.assembler.path_count
    assert count > 50  # every field of a Receipt with items, groups, configs and stages
    reasons: dict[str, int] = {}
    for where in range(count):
        omissions.clear()
        body, path, differs = tampered_prepare(served, Tampering(where))
        assert differs, path
        assert_caught(served, body, path, omissions)
        for line in omissions:
            reason = line.split("reason=")[1].split()[0]
            reasons[reason] = reasons.get(reason, 0) + 1
    print(f"{count} fields, caught as: {dict(sorted(reasons.items()))}")
    # Most changes stay within the schema and are caught by comparing with what the prepare recorded.
    # (A changed config_id is caught as out of order or as a digest mismatch, depending on where the new id
    # sorts: the configs' ids are digests of a random Scope id, so that one is not counted on here.)
    compared = {"round_mismatch", "search_group_mismatch", "rerank_group_mismatch"}
    assert compared | {"stage_mismatch", "origin_mismatch", "omission_mismatch"} <= set(reasons)



def test_a_duplicated_rerank_config_is_caught_as_such(served: Served, omissions: list[str]) -> None:
    served.api.prepare(served.scope_id, QUERY, include_receipt=True)
    honest = strict_json(served.api.prepare(served.scope_id, QUERY, include_receipt=True).content)["receipt"]
    found = paths(honest)
    where = found.index(("retrieval", "rerank_configs"))
    configs = len(honest["retrieval"]["rerank_configs"])
    omissions.clear()
    body, path, differs = tampered_prepare(served, Tampering(where, how=configs))  # op 1: duplicate entry 0
    assert differs and path == ("retrieval", "rerank_configs")
    assert_caught(served, body, path, omissions)
    assert any("reason=rerank_config_mismatch" in line for line in omissions), omissions


def test_reordered_omitted_groups_are_caught(served: Served, omissions: list[str]) -> None:
    honest = strict_json(served.api.prepare(served.scope_id, QUERY, include_receipt=True).content)["receipt"]
    groups = len(honest["omitted"])
    assert groups > 1
    omissions.clear()
    where = paths(honest).index(("omitted",))
    body, path, differs = tampered_prepare(served, Tampering(where, how=2 * groups))  # op 2: reversed
    assert differs and path == ("omitted",)
    assert_caught(served, body, path, omissions)
    assert any("reason=omission_mismatch" in line for line in omissions), omissions


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    plan=st.builds(
        Tampering,
        where=st.integers(min_value=0, max_value=10_000),
        how=st.integers(min_value=0, max_value=1_000),
        delta=st.integers(min_value=-1_000, max_value=1_000).filter(bool),
        scale=st.floats(min_value=0.0, max_value=1e6, allow_nan=False).filter(lambda f: f != 1.0),
        text=st.text(min_size=1, max_size=8),
    )
)
def test_random_tamperings_are_all_caught(served: Served, omissions: list[str], plan: Tampering) -> None:
    omissions.clear()
    body, path, differs = tampered_prepare(served, plan)
    assume(differs)  # e.g. a float scaled into the same value: not a tampering
    assert_caught(served, body, path, omissions)
