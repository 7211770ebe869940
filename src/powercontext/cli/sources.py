"""``powercontext source``: what was captured from conversations (list, show) and erasing one for good (purge).

A Source's content is someone's words, captured as they were said: every human view prints it through ``say``
(terminal-safe); ``--json`` prints the Server's answer exactly.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated

import typer

from powercontext.cli.common import (
    DEFAULT_URL,
    JsonOption,
    PurgeYesOption,
    ScopeOption,
    UrlOption,
    printed_as_json,
    run,
)
from powercontext.cli.terminal import confirm_irreversible, say

if TYPE_CHECKING:
    from powercontext.client import PowerContextClient
    from powercontext.contract.sources import MemoryCandidate, Source, SourceCreated

source_app = typer.Typer(
    no_args_is_help=True, help="Sources captured from conversations: list, show, purge (erase one for good)."
)

CANDIDATE_STATUSES = ("pending", "approved", "rejected")
CANDIDATE_PAGE = 200
CANDIDATE_PAGES = 5  # per status: a Source's Candidates are looked for among the newest 1,000 of each


def _extraction(source: SourceCreated) -> str:
    extraction = source.extraction
    reason = f" ({extraction.reason})" if extraction.reason else ""
    return f"{extraction.status}{reason}"


def _origin(source: SourceCreated) -> str:
    origin = source.origin
    parts = [origin.host, f"session {origin.session_id}" if origin.session_id else None]
    parts.append(f"turn {origin.turn}" if origin.turn is not None else None)
    return ", ".join(p for p in parts if p)


def _line(source: SourceCreated) -> str:
    origin = _origin(source)
    where = f"  [{origin}]" if origin else ""
    return f"{source.source_id}  {source.kind}  observed {source.observed_at}  {_extraction(source)}{where}"


def _wrote(source: SourceCreated) -> str:
    return ", ".join(f"{w.artifact.artifact_id}@{w.artifact.revision}" for w in source.extraction.writes)


@source_app.command("list")
def source_list(
    scope: ScopeOption,
    limit: Annotated[int, typer.Option(min=1, max=200, help="Sources per page.")] = 20,
    cursor: Annotated[str | None, typer.Option(help="The next_cursor a previous page printed.")] = None,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """List the Scope's Sources, newest first, one page at a time (without their text: `source show` has it)."""
    page = run(url, lambda c: c.list_sources(scope, limit, cursor))
    if printed_as_json(page, as_json):
        return
    if not page.items and cursor is None:
        say(f"no Sources in {scope}")
    for source in page.items:
        say(_line(source))
    if page.next_cursor is not None:
        say(f"more: --cursor {page.next_cursor}", err=True)


@source_app.command("show")
def source_show(
    source_id: Annotated[str, typer.Argument(help="The Source's id (src_...).")],
    scope: ScopeOption,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """One Source: when and where it was captured, its extraction, its text, and the memories and review-inbox
    Candidates extracted from it. With --json, the Server's exact read of the Source."""
    source = run(url, lambda c: c.get_source(scope, source_id))
    if printed_as_json(source, as_json):
        return
    _print_source(source)
    if source.extraction.reason == "in-review":
        found, complete = run(url, _candidates_of(scope, source_id))
        _print_candidates(found, complete, scope)


def _print_source(source: Source) -> None:
    say(f"{source.source_id} ({source.kind}, observed {source.observed_at}, captured {source.created_at})")
    origin = _origin(source)
    if origin:
        say(f"origin: {origin}")
    extraction = source.extraction
    say(f"extraction: {_extraction(source)}, {extraction.attempts} attempt(s)")
    if extraction.writes:
        say(f"wrote: {_wrote(source)}")
    if source.redactions:
        say("redacted: " + ", ".join(f"{r.type} x{r.count}" for r in source.redactions))
    say(f"sha256: {source.content_digest}")
    say("")
    say(source.content)


def _candidates_of(
    scope: str, source_id: str
) -> Callable[[PowerContextClient], Awaitable[tuple[list[MemoryCandidate], bool]]]:
    """The client call that finds the Candidates extracted from ``source_id`` (the inbox is listed by status,
    not by Source): (those found, whether every Candidate of the Scope was looked at)."""

    async def find(client: PowerContextClient) -> tuple[list[MemoryCandidate], bool]:
        found: list[MemoryCandidate] = []
        complete = True
        for status in CANDIDATE_STATUSES:
            cursor: str | None = None
            for _ in range(CANDIDATE_PAGES):
                page = await client.list_memory_candidates(scope, status, CANDIDATE_PAGE, cursor)
                found += [c for c in page.items if c.source_id == source_id]
                cursor = page.next_cursor
                if cursor is None:
                    break
            complete = complete and cursor is None
        return found, complete

    return find


def _print_candidates(found: list[MemoryCandidate], complete: bool, scope: str) -> None:
    from powercontext.cli.candidates import candidate_line

    say("")
    say(f"candidates extracted from it ({len(found)}):" if found else "candidates extracted from it: none found")
    for candidate in found:
        say(f"  {candidate_line(candidate)}")
    if not complete:
        say(
            f"  (only the newest {CANDIDATE_PAGE * CANDIDATE_PAGES} of each status were looked at:"
            f" `powercontext memory candidates list -s {scope}` lists them all)"
        )


@source_app.command("purge")
def source_purge(
    source_id: Annotated[str, typer.Argument(help="The Source's id (src_...).")],
    scope: ScopeOption,
    yes: PurgeYesOption = False,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Erase a Source's captured text for good (irreversible). It is never extracted afterwards, and the text of
    the review-inbox Candidates extracted from it becomes [purged]; the memories it wrote stay (purge them with
    `powercontext memory purge`)."""
    confirm_irreversible(f"purge source {source_id} from {scope}: its captured text is erased for good", yes)
    purged = run(url, lambda c: c.purge_source(scope, source_id))
    if printed_as_json(purged, as_json):
        return
    say(f"purged source {purged.source_id} from {purged.scope_id}: its captured text is erased")
    if purged.extraction.writes:
        say(f"the memories it wrote stay: {_wrote(purged)} (`powercontext memory purge ID -s {scope}` erases one)")
