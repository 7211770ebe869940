"""OpenTelemetry spans and Prometheus metrics: content-free, with the prepare stages parented and in order.

Spans: the real app on uvicorn in this process, with the OpenTelemetry SDK and an in-memory exporter.
Metrics: a Server subprocess whose embedding provider (a real fake-provider process) fails on demand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from powercontext.recall.deterministic import LexicalCoverageReranker
from tests.conftest import StartInProcess, live_server
from tests.embedding_fixture import EmbeddingServer, start_embedding_server
from tests.support import REQUEST_ID_HEADER, wait_until

MARKERS = ("quokka-7731", "scope-marker-5510", "body-marker-9921")

_EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module")
def spans() -> Iterator[InMemorySpanExporter]:
    current = trace.get_tracer_provider()
    if not isinstance(current, TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    yield _EXPORTER


def all_text(span: ReadableSpan) -> str:
    """Everything a span exports besides timing: name, attributes, events, status, resource."""
    parts: list[Any] = [span.name, dict(span.attributes or {}), span.status.description]
    parts += [(e.name, dict(e.attributes or {})) for e in span.events]
    return json.dumps(parts, default=str)


def workload(base_url: str) -> httpx.Response:
    scope_id = f"project:{MARKERS[1]}"
    with httpx.Client(base_url=base_url, timeout=30) as http:
        assert http.post("/v1/scopes", json={"scope_id": scope_id, "title": MARKERS[2]}).status_code == 201
        for i in range(3):
            text = f"The {MARKERS[0]} deploy note {i} mentions {MARKERS[2]}"
            assert http.post(f"/v1/scopes/{scope_id}/atomic-memory", json={"text": text, "kind": "fact"}).is_success
        http.post(f"/v1/scopes/{scope_id}/atomic-memory/search", json={"query": MARKERS[0]})
        http.get(f"/v1/scopes/{scope_id}/artifacts/atomic-memory/am_{MARKERS[0]}")  # 404 with the marker in the path
        http.post("/v1/context/prepare", json={"scope_id": scope_id, "query": f"{MARKERS[0]}", "max_bytes": 70000})
        prepared = http.post(
            "/v1/context/prepare",
            json={"scope_id": scope_id, "query": f"what about {MARKERS[0]}?", "include_receipt": True},
        )
        assert prepared.status_code == 200 and MARKERS[0] in prepared.json()["content"]
        return prepared


def test_spans_carry_no_content_and_prepare_stages_are_parented_in_order(
    spans: InMemorySpanExporter, inprocess_server: StartInProcess, sqlite_store: Any
) -> None:
    live = inprocess_server(sqlite_store)
    prepared = workload(live.base_url)
    mcp_search(live.base_url, f"project:{MARKERS[1]}", MARKERS[0])
    finished = spans.get_finished_spans()
    assert len(finished) > 10
    for span in finished:
        text = all_text(span)
        for marker in MARKERS:
            assert marker not in text, f"{marker} leaked into span {span.name}"

    request_id = prepared.headers[REQUEST_ID_HEADER]
    [server_span] = [s for s in finished if (s.attributes or {}).get("powercontext.request_id") == request_id]
    assert server_span.name == "POST /v1/context/prepare"
    assert server_span.kind == trace.SpanKind.SERVER
    assert (server_span.attributes or {})["http.response.status_code"] == 200
    assert server_span.context is not None
    children = sorted(
        (s for s in finished if s.parent is not None and s.parent.span_id == server_span.context.span_id),
        key=lambda s: s.start_time or 0,
    )
    names = [s.name for s in children]
    assert names == [
        "scope.context",
        "memory.search",
        "topic_memory.search",
        "experience.search",
        "context.build",
        "receipt",
    ]
    for child in children:
        assert child.context is not None and child.context.trace_id == server_span.context.trace_id
        assert (child.attributes or {})["powercontext.operation.unit"] == "stage"
        assert server_span.start_time <= child.start_time <= child.end_time <= server_span.end_time  # type: ignore[operator]
    memory = children[1].attributes or {}
    assert memory["powercontext.family"] == "atomic-memory"
    assert memory["powercontext.search.outcome"] == "completed"
    build = children[4].attributes or {}
    assert build["powercontext.context.status"] == "ready"
    assert build["powercontext.context.content_bytes"] == prepared.json()["content_bytes"]
    assert build["powercontext.context.selected_count"] == len(prepared.json()["receipt"]["selected"])
    # The Receipt's own stage list names the same stages, in the same order (receipt excepted).
    receipt_stages = [s["stage"] for s in prepared.json()["receipt"]["stages"]]
    assert [n for n in names if n != "receipt"] == list(dict.fromkeys(receipt_stages))


def mcp_search(base_url: str, scope_id: str, query: str) -> None:
    """One MCP tool call over /mcp, whose arguments carry the markers."""

    async def go() -> None:
        async with Client(base_url + "/mcp") as client:
            result = await client.call_tool("memory_search", {"scope_id": scope_id, "query": query})
            assert not result.is_error and result.structured_content is not None
            assert result.structured_content["hits"]

    anyio.run(go)


def test_mcp_bridge_calls_are_children_of_the_mcp_request(
    spans: InMemorySpanExporter, inprocess_server: StartInProcess, sqlite_store: Any
) -> None:
    live = inprocess_server(sqlite_store)
    workload(live.base_url)
    spans.clear()
    mcp_search(live.base_url, f"project:{MARKERS[1]}", MARKERS[0])
    finished = spans.get_finished_spans()
    assert any(s.name == "POST /mcp" and (s.attributes or {})["http.route"] == "/mcp" for s in finished)
    [inner] = [s for s in finished if s.name == "POST /v1/scopes/{scope_id}/atomic-memory/search"]
    # The in-process API call is a child of the MCP SDK's span for the tool call that made it.
    by_id = {s.context.span_id: s for s in finished if s.context is not None}
    parent = inner.parent
    chain = []
    while parent is not None and parent.span_id in by_id:
        chain.append(by_id[parent.span_id])
        parent = by_id[parent.span_id].parent
    assert [s.name for s in chain][:1] == ["tools/call memory_search"]
    assert all(s.context is not None and inner.context is not None for s in chain)
    assert {s.context.trace_id for s in chain if s.context} == {inner.context.trace_id if inner.context else 0}
    text = httpx.get(live.base_url + "/metrics", timeout=10).text
    assert 'route="/mcp"' in text
    search = {"route": "/v1/scopes/{scope_id}/atomic-memory/search", "method": "POST", "status": "200"}
    # One search from the workload; the bridge's in-process search is traced but not counted.
    assert metric(text, "powercontext_http_request_duration_seconds_count", **search) == 1


def test_inbound_trace_context_is_continued(
    spans: InMemorySpanExporter, inprocess_server: StartInProcess, sqlite_store: Any
) -> None:
    live = inprocess_server(sqlite_store)
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    r = httpx.get(live.base_url + "/health/live", headers={"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"})
    request_id = r.headers[REQUEST_ID_HEADER]
    assert wait_until(
        lambda: any(
            (s.attributes or {}).get("powercontext.request_id") == request_id for s in spans.get_finished_spans()
        )
    )
    [span] = [
        s for s in spans.get_finished_spans() if (s.attributes or {}).get("powercontext.request_id") == request_id
    ]
    assert span.context is not None and format(span.context.trace_id, "032x") == trace_id
    assert span.name == "GET /health/live"


def test_a_failed_stage_is_exported_with_its_error_type_under_the_request_span(
    spans: InMemorySpanExporter, inprocess_server: StartInProcess, sqlite_store: Any
) -> None:
    live = inprocess_server(sqlite_store)
    missing = f"project:{MARKERS[1]}-missing"
    r = httpx.post(live.base_url + "/v1/context/prepare", json={"scope_id": missing, "query": MARKERS[0]})
    assert r.status_code == 404
    request_id = r.headers[REQUEST_ID_HEADER]

    def request_span() -> ReadableSpan | None:
        found = [
            s for s in spans.get_finished_spans() if (s.attributes or {}).get("powercontext.request_id") == request_id
        ]
        return found[0] if found else None

    assert wait_until(lambda: request_span() is not None)
    server_span = request_span()
    assert server_span is not None and server_span.context is not None
    [stage] = [
        s
        for s in spans.get_finished_spans()
        if s.parent is not None and s.parent.span_id == server_span.context.span_id
    ]
    assert stage.name == "scope.context"
    assert (stage.attributes or {})["error.type"] == "ScopeNotFound"
    assert stage.status.status_code == trace.StatusCode.ERROR
    for marker in MARKERS:
        assert marker not in all_text(stage) and marker not in all_text(server_span)


def test_the_rerank_stage_span_counts_its_pool_and_outcome(
    spans: InMemorySpanExporter, inprocess_server: StartInProcess, sqlite_store: Any
) -> None:
    live = inprocess_server(sqlite_store, reranker=LexicalCoverageReranker(candidate_limit=30))
    scope_id = f"project:{MARKERS[1]}-rerank"
    with httpx.Client(base_url=live.base_url, timeout=30) as http:
        assert http.post("/v1/scopes", json={"scope_id": scope_id, "title": "rerank"}).status_code == 201
        items = [{"text": f"deploy note {i} about the {MARKERS[0]} ledger", "kind": "fact"} for i in range(20)]
        assert http.post(f"/v1/scopes/{scope_id}/atomic-memory/batch", json={"items": items}).is_success
        r = http.post("/v1/context/prepare", json={"scope_id": scope_id, "query": f"{MARKERS[0]} ledger deploy"})
    assert r.status_code == 200
    request_id = r.headers[REQUEST_ID_HEADER]

    def children() -> list[ReadableSpan]:
        finished = spans.get_finished_spans()
        parents = [s for s in finished if (s.attributes or {}).get("powercontext.request_id") == request_id]
        if not parents or parents[0].context is None:
            return []
        parent_id = parents[0].context.span_id
        return [s for s in finished if s.parent is not None and s.parent.span_id == parent_id]

    assert wait_until(lambda: bool(children()))
    searches = [s for s in children() if s.name == "memory.search"]
    assert len(searches) == 2  # the coarse search, then the rerank (part of Memory search)
    rerank = searches[1].attributes or {}
    assert rerank["powercontext.rerank.candidate_count"] == 20
    assert rerank["powercontext.rerank.selected_count"] == 1
    assert rerank["powercontext.rerank.kept_count"] == 16  # the Atomic Memory entry cap
    assert "powercontext.family" not in rerank  # no search was recorded on the rerank stage


@pytest.fixture(scope="module")
def embeddings() -> Iterator[EmbeddingServer]:
    with start_embedding_server(16) as server:
        yield server


def metric(text: str, name: str, **labels: str) -> float:
    """The value of one sample in a Prometheus exposition."""
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        match = re.match(r"^(\w+)(?:\{(.*)\})? (\S+)$", line)
        if not match or match.group(1) != name:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
        if found == labels:
            return float(match.group(3))
    return 0.0


def test_metrics_count_the_workload_without_any_user_string(embeddings: EmbeddingServer, tmp_path: Path) -> None:
    settings = {
        "POWERCONTEXT_EMBEDDINGS": "openai-compatible",
        "POWERCONTEXT_EMBEDDINGS_BASE_URL": embeddings.base_url,
        "POWERCONTEXT_EMBEDDINGS_MODEL": "fake",
        "POWERCONTEXT_EMBEDDINGS_DIMENSION": "16",
        "POWERCONTEXT_EMBEDDINGS_TIMEOUT": "2",
        "POWERCONTEXT_EMBEDDINGS_COOLDOWN": "0",
    }
    with live_server(tmp_path, settings) as live:
        embeddings.control("answer")
        prepared = workload(live.base_url)
        embeddings.control("error")
        scope_id = f"project:{MARKERS[1]}"
        failed = httpx.post(
            live.base_url + "/v1/context/prepare",
            json={"scope_id": scope_id, "query": MARKERS[0], "include_receipt": True},
            timeout=30,
        )
        assert failed.status_code == 200
        embeddings.control("answer")
        text = httpx.get(live.base_url + "/metrics", timeout=10).text

    for marker in MARKERS:
        assert marker not in text
    assert "am_" not in text and "project:" not in text
    assert (
        metric(
            text,
            "powercontext_http_request_duration_seconds_count",
            route="/v1/context/prepare",
            method="POST",
            status="200",
        )
        == 2
    )
    assert (
        metric(
            text,
            "powercontext_http_request_duration_seconds_count",
            route="/v1/context/prepare",
            method="POST",
            status="422",
        )
        == 1
    )  # max_bytes over the limit
    assert (
        metric(
            text,
            "powercontext_http_request_duration_seconds_count",
            route="/v1/scopes/{scope_id}/artifacts/{family}/{artifact_id}",
            method="GET",
            status="404",
        )
        == 1
    )
    assert metric(text, "powercontext_prepare_duration_seconds_count", outcome="ready") == 2
    assert metric(text, "powercontext_prepare_duration_seconds_count", outcome="error") == 1
    assert metric(text, "powercontext_prepare_content_bytes_count") == 2
    assert metric(text, "powercontext_prepare_content_bytes_sum") >= prepared.json()["content_bytes"]
    assert metric(text, "powercontext_prepare_selected_items_count") == 2
    assert (
        metric(text, "powercontext_search_fallbacks_total", family="atomic-memory", reason="inference_unavailable") >= 1
    )
    assert metric(text, "powercontext_provider_calls_total", outcome="inference_unavailable") >= 1
    assert metric(text, "powercontext_provider_calls_total", outcome="ok") >= 1


class RaisingAssembler:
    """A buggy Receipt assembler whose exception message carries the query."""

    def assemble(self, evidence: Any) -> Any:
        raise RuntimeError(f"assembler bug while handling {evidence.query!r}")


def test_receipt_omissions_are_counted_by_reason(
    spans: InMemorySpanExporter, inprocess_server: StartInProcess, sqlite_store: Any
) -> None:
    live = inprocess_server(sqlite_store, receipt_assembler=RaisingAssembler())
    prepared = workload_without_receipt_check(live.base_url)
    assert "receipt" not in prepared.json()  # fail-open: the context is still delivered
    text = httpx.get(live.base_url + "/metrics", timeout=10).text
    assert metric(text, "powercontext_receipt_omissions_total", reason="assembly_failed") == 1
    for marker in MARKERS:
        assert marker not in text
    [receipt_span] = [
        s
        for s in spans.get_finished_spans()
        if s.name == "receipt" and (s.attributes or {}).get("powercontext.receipt.omitted_reason")
    ]
    assert MARKERS[0] not in all_text(receipt_span)


def workload_without_receipt_check(base_url: str) -> httpx.Response:
    scope_id = f"project:{MARKERS[1]}-omit"
    with httpx.Client(base_url=base_url, timeout=30) as http:
        assert http.post("/v1/scopes", json={"scope_id": scope_id, "title": "t"}).status_code == 201
        text = f"The {MARKERS[0]} note"
        assert http.post(f"/v1/scopes/{scope_id}/atomic-memory", json={"text": text, "kind": "fact"}).is_success
        body = {"scope_id": scope_id, "query": MARKERS[0], "include_receipt": True}
        response = http.post("/v1/context/prepare", json=body)
        assert response.status_code == 200
        return response
