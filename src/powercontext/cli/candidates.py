"""``powercontext memory candidates``: the review inbox of extracted Atomic Memory writes (list, show, decide)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from powercontext.cli.common import DEFAULT_URL, JsonOption, ScopeOption, UrlOption, print_json, run
from powercontext.cli.terminal import say

if TYPE_CHECKING:
    from powercontext.contract.sources import MemoryCandidate

candidates_app = typer.Typer(
    no_args_is_help=True, help="Extracted writes waiting for review: list, show, approve, reject."
)


def candidate_line(candidate: MemoryCandidate) -> str:
    op = candidate.operation
    shown = [op.target] if op.target else list(op.merged or [])
    target = "".join(f" {a.artifact.artifact_id}@{a.artifact.revision}" for a in shown)
    text = f": {op.text}" if op.text else ""
    return f"{candidate.candidate_id}  {candidate.status}  {op.op}{target}{text}  (source {candidate.source_id})"


def _print(candidate: MemoryCandidate, as_json: bool) -> None:
    if as_json:
        print_json(candidate.model_dump(mode="json"))
        return
    say(candidate_line(candidate))
    if candidate.result is not None:
        ref = candidate.result.artifact
        say(f"  wrote {ref.artifact_id} revision {ref.revision}")
    if candidate.reject_reason:
        say(f"  rejected: {candidate.reject_reason}")


@candidates_app.command("list")
def candidates_list(
    scope: ScopeOption,
    status: Annotated[str, typer.Option(help="pending, approved or rejected.")] = "pending",
    limit: Annotated[int, typer.Option(min=1, max=200)] = 50,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """The Scope's extracted writes in the review inbox, newest first."""
    page = run(url, lambda c: c.list_memory_candidates(scope, status, limit))
    if as_json:
        print_json(page.model_dump(mode="json"))
        return
    if not page.items:
        say(f"no {status} candidates in {scope}")
    for candidate in page.items:
        say(candidate_line(candidate))


@candidates_app.command("show")
def candidates_show(
    candidate_id: Annotated[str, typer.Argument()],
    scope: ScopeOption,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """One extracted write: the operation, its Source, the decision."""
    _print(run(url, lambda c: c.get_memory_candidate(scope, candidate_id)), as_json)


@candidates_app.command("approve")
def candidates_approve(
    candidate_id: Annotated[str, typer.Argument()],
    scope: ScopeOption,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Apply it, with its Source as lineage (refused with revision-conflict if the memory changed since)."""
    _print(run(url, lambda c: c.approve_memory_candidate(scope, candidate_id)), as_json)


@candidates_app.command("reject")
def candidates_reject(
    candidate_id: Annotated[str, typer.Argument()],
    scope: ScopeOption,
    reason: Annotated[str | None, typer.Option(help="Why (kept with the decision).")] = None,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Reject it: nothing is written."""
    _print(run(url, lambda c: c.reject_memory_candidate(scope, candidate_id, reason)), as_json)
