"""``powercontext context explain``: each candidate of one prepare, with its ranks, scores and fate."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from powercontext.cli.common import DEFAULT_URL, JsonOption, ScopeOption, UrlOption, context_request, printed_as_json
from powercontext.cli.common import run as _run

if TYPE_CHECKING:
    from powercontext.contract.explain import ContextExplanation, ExplainedCandidate


def context_explain(
    scope: ScopeOption,
    query: Annotated[str, typer.Option("--query", "-q", help="The request the agent is about to handle.")],
    expect: Annotated[
        list[str] | None,
        typer.Option("--expect", metavar="ID", help="An Artifact id you expected injected (repeatable)."),
    ] = None,
    max_bytes: Annotated[int, typer.Option(min=512, max=32768, help="Byte budget for the content.")] = 8000,
    section: Annotated[
        list[str] | None,
        typer.Option("--section", metavar="FAMILY=LIMIT", help="An explicit assembly section, as for prepare."),
    ] = None,
    include_code: Annotated[bool, typer.Option(help="Add up to 4 exact code ranges.")] = False,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Why each candidate of one prepare was injected or not: rank, scores, matched terms, fate.

    A diagnostic: it runs the prepare once with its evidence recorded. No item text is shown; read an item
    with ``powercontext memory get``.
    """
    from powercontext.contract.explain import ExplainContextRequest

    fields: dict[str, object] = {"scope_id": scope, "query": query, "max_bytes": max_bytes, "expected": expect or []}
    request = context_request(ExplainContextRequest.model_validate, fields, section, include_code)
    explained = _run(url, lambda c: c.explain_context(request))
    if printed_as_json(explained, as_json):
        return
    print_explanation(explained)


def _identity(candidate: ExplainedCandidate) -> tuple[str, str]:
    if candidate.code_evidence is not None:
        code = candidate.code_evidence
        return code.scope_id, f"{code.path}:{code.start_line}-{code.end_line}"
    assert candidate.artifact_address is not None
    address = candidate.artifact_address
    return address.scope_id, f"{address.artifact.artifact_id}@{address.artifact.revision}"


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"


def print_explanation(explained: ContextExplanation) -> None:
    """One row per candidate in fate order (injected first), then where each expected id landed."""
    from rich.table import Table

    from powercontext.cli.rich_terminal import TerminalConsole

    console = TerminalConsole()
    table = Table(title=f"Candidates (query terms: {' '.join(explained.query_terms) or 'none'})")
    for column in ("fate", "family", "scope", "identity", "rank", "bm25", "cosine", "fused", "matched"):
        table.add_column(column, overflow="fold")

    def order(c: ExplainedCandidate) -> tuple[int, int, int]:
        return (0 if c.fate.position else 1, c.fate.position or 0, c.rank)

    for candidate in sorted(explained.candidates, key=order):
        fate = candidate.fate
        if fate.position:
            shown = f"#{fate.position} ({fate.rendered_bytes} B)"
        else:
            shown = f"round {fate.round} not retained" if fate.outcome == "not_retained" else str(fate.reason)
        scope_id, identity = _identity(candidate)
        marker = " *" if candidate.expected else ""
        table.add_row(
            shown, candidate.family, scope_id, identity + marker, str(candidate.rank), _number(candidate.bm25),
            _number(candidate.cosine), _number(candidate.fused), " ".join(candidate.matched_terms),
        )  # fmt: skip
    console.print(table)
    for family in explained.families:
        if family.candidates == 0:
            console.print(f"{family.family}: no candidates (nothing in the searched Scopes matched)", highlight=False)
    for item in explained.expected:
        console.print(f"expected {item.artifact_id}: {item.where} — {item.explanation}", highlight=False)
    prepared = explained.prepared
    console.print(f"{prepared.status}, {prepared.content_bytes} bytes injected", highlight=False)
