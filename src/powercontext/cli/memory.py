"""``powercontext memory``: write, search, read and import Atomic Memory, and embed what has no vector.

Every command but ``reindex`` talks HTTP to a running Server; ``reindex`` opens the store itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from powercontext.cli.candidates import candidates_app
from powercontext.cli.choices import MEMORY_KINDS, SEARCH_MODES, one_of
from powercontext.cli.common import (
    DEFAULT_URL,
    EXIT_REFUSED,
    EXIT_USAGE,
    JsonOption,
    MemoryStateOption,
    PurgeYesOption,
    ScopeOption,
    StoreOption,
    UrlOption,
    fail,
    printed_as_json,
)
from powercontext.cli.common import print_json as _print_json
from powercontext.cli.common import run as _run
from powercontext.cli.import_file import read_import_file, where_undecodable
from powercontext.cli.memory_export import memory_export
from powercontext.cli.server import open_store_or_exit, settings_from_options
from powercontext.cli.terminal import confirm_irreversible, say
from powercontext.cli.wire_views import print_created, print_memory, print_search

if TYPE_CHECKING:
    from powercontext.client import PowerContextClient
    from powercontext.contract.memory import AtomicMemory, AtomicMemoryCreate, AtomicMemoryList

IMPORT_BATCH = 500
KINDS = ", ".join(MEMORY_KINDS)
memory_app = typer.Typer(no_args_is_help=True, help="Write, search and read Atomic Memory.")


def _print_memory(memory: AtomicMemory, as_json: bool) -> None:
    if not printed_as_json(memory, as_json):
        print_memory(memory.model_dump(mode="json"))


def _print_page(page: AtomicMemoryList, as_json: bool) -> None:
    if printed_as_json(page, as_json):
        return
    for memory in page.items:
        ref = memory.artifact_address.artifact
        say(f"{ref.artifact_id}@{ref.revision}  [{memory.kind}]  {memory.state}  {memory.text}")
    if page.next_cursor is not None:
        say(f"more: --cursor {page.next_cursor}", err=True)


@memory_app.command("add")
def memory_add(
    scope: ScopeOption,
    text: Annotated[
        str | None,
        typer.Argument(help="The memory: one short, self-contained statement ('-' reads it from stdin)."),
    ] = None,
    file: Annotated[
        Path | None, typer.Option("--file", help="Read the memory's text from a UTF-8 file ('-' for stdin).")
    ] = None,
    kind: Annotated[str, typer.Option(metavar="KIND", parser=one_of(MEMORY_KINDS), help=f"One of: {KINDS}.")] = "fact",
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A tag (repeatable).")] = None,
    idempotency_key: Annotated[str | None, typer.Option(help="Retry-safe key.")] = None,
    observed_at: Annotated[
        str | None,
        typer.Option(help="When it was true, if not now: an RFC 3339 date or date-time (2025-07-16T09:30:00Z)."),
    ] = None,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Add one Atomic Memory; says which earlier memories it may replace.

    The text is the argument, or read from stdin (TEXT given as -) or from --file PATH: for a note longer than a
    command line takes.
    """
    body = _memory_text(text, file)
    memory = _run(
        url,
        lambda c: c.add_memory(scope, body, kind, tag or [], idempotency_key, observed_at),  # type: ignore[arg-type]
    )
    if not printed_as_json(memory, as_json):
        print_created(memory.model_dump(mode="json"), scope)


def _memory_text(text: str | None, file: Path | None) -> str:
    """The TEXT argument, stdin (``-``) or ``--file``: exactly one of them; a trailing newline is dropped."""
    import sys

    if (text is None) == (file is None):
        raise fail("invalid-request: give the memory's TEXT, '-' for stdin, or --file PATH (one of them)", EXIT_USAGE)
    if text is not None and text != "-":
        return text
    try:
        raw = sys.stdin.buffer.read() if text == "-" or str(file) == "-" else Path(str(file)).read_bytes()
    except OSError as exc:
        raise fail(f"unreadable-file: {file}: {exc.strerror or type(exc).__name__}", EXIT_REFUSED) from None
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(f"not-utf-8: {file or 'stdin'}: {where_undecodable(raw, exc)}", EXIT_REFUSED) from None
    return decoded.removesuffix("\n").removesuffix("\r")


@memory_app.command("reindex")
def memory_reindex(
    db: Annotated[
        Path | None, typer.Option(help="SQLite file. Default: the user data dir, or POWERCONTEXT_DB.")
    ] = None,
    batch_size: Annotated[int, typer.Option(min=1, max=2048, help="Memories per provider call.")] = 64,
    store_url: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Embed memories that have no vector from the configured model (works beside a running Server)."""
    from rich.progress import Progress

    from powercontext.inference.config import build_embedding_provider
    from powercontext.inference.errors import InferenceError
    from powercontext.search.embedding import GuardedEmbedder
    from powercontext.search.reindex import reindex

    settings = settings_from_options(db, store=store_url)
    provider = build_embedding_provider(settings.embeddings)
    if not provider.configured:
        say("error: no embedding provider is configured; set POWERCONTEXT_EMBEDDINGS (see docs)", err=True)
        raise typer.Exit(2)
    store = open_store_or_exit(settings, create=False)  # nothing to embed in a store that is not there
    try:
        with Progress(transient=True) as bar:
            task = bar.add_task("embedding", total=None)
            report = reindex(
                store,
                GuardedEmbedder(provider, cooldown_s=0),
                batch_size=batch_size,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
            )
    except InferenceError as exc:
        say(f"error: {exc.reason}: the provider failed; finished batches are kept, rerun to continue", err=True)
        raise typer.Exit(1) from None
    finally:
        store.close()
        provider.close()
    if as_json:
        _print_json({"embedded": report.embedded, "remaining": report.remaining, "model_id": provider.model_id})
        return
    say(f"embedded {report.embedded} memories with {provider.model_id}; {report.remaining} still without one")


@memory_app.command("import")
def memory_import(
    file: Annotated[
        Path,
        typer.Argument(
            exists=True, dir_okay=False, help="JSONL: one {text, kind, tags?, idempotency_key?, observed_at?} a line."
        ),
    ],
    scope: ScopeOption,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Import memories from a JSONL file in batches of 500 (each batch is one transaction).

    Re-running an import is safe: every line is sent with an idempotency key (its own
    idempotency_key when it has one, else one derived from the file's SHA-256 and the line number).
    Lines already stored by an earlier (perhaps interrupted) run of the same, unchanged file are not
    written again, and the summary says how many already existed. An edited file gets new keys.
    """
    items = read_import_file(file)
    if not items:
        say("nothing to import", err=True)
        if as_json:
            _print_json({"scope_id": scope, "imported": 0, "existed": 0})
        return
    unanswered: list[bool] = []  # set when a batch got no answer: the client cannot know whether it was stored
    try:
        written, existed = _run(url, _uploader(scope, items, unanswered))
    except typer.Exit:
        if unanswered:
            say(
                "no answer came for the failed batch: it may or may not have been stored; earlier batches were"
                " kept; re-running the same import is safe (lines already stored are not written again)",
                err=True,
            )
        else:
            say("the failed batch wrote nothing; earlier batches were kept; re-run to resume safely", err=True)
        raise
    if as_json:
        _print_json({"scope_id": scope, "imported": written, "existed": existed})
        return
    say(f"imported {written} memories into {scope}; {existed} already existed")


def _uploader(
    scope: str, items: list[AtomicMemoryCreate], unanswered: list[bool]
) -> Callable[[PowerContextClient], Awaitable[tuple[int, int]]]:
    """The client call that sends ``items`` in batches of ``IMPORT_BATCH``: (written, already existed). A batch
    that got no answer (``server-unreachable``) is noted in ``unanswered``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from powercontext.cli.rich_terminal import TerminalConsole
    from powercontext.client import PowerContextError

    async def upload(client: PowerContextClient) -> tuple[int, int]:
        written = existed = 0
        # On stderr (stdout carries the summary or --json) and kept when done, as `eval run` shows its own.
        console = TerminalConsole(stderr=True)
        with Progress(
            TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=console
        ) as bar:
            task = bar.add_task("import", total=len(items))
            for start in range(0, len(items), IMPORT_BATCH):
                batch = items[start : start + IMPORT_BATCH]
                try:
                    answered = await client.add_memories(scope, batch)
                except PowerContextError as exc:
                    if exc.code == "server-unreachable":
                        unanswered.append(True)
                    raise
                replayed = sum(1 for item in answered if item.replayed)
                existed += replayed
                written += len(answered) - replayed
                bar.update(task, advance=len(batch))
        return written, existed

    return upload


@memory_app.command("search")
def memory_search(
    query: Annotated[str, typer.Argument()],
    scope: ScopeOption,
    limit: Annotated[int, typer.Option(min=1, max=50)] = 10,
    mode: Annotated[
        str,
        typer.Option(
            metavar="MODE", parser=one_of(SEARCH_MODES), help="auto or fts (vector and hybrid need a provider)."
        ),
    ] = "auto",
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Search active Atomic Memory heads."""
    result = _run(url, lambda c: c.search_memory(scope, query, mode, limit))  # type: ignore[arg-type]
    if not printed_as_json(result, as_json):
        print_search(result.model_dump(mode="json"))


@memory_app.command("list")
def memory_list(
    scope: ScopeOption,
    limit: Annotated[int, typer.Option(min=1, max=200, help="Memories per page.")] = 20,
    cursor: Annotated[str | None, typer.Option(help="The next_cursor a previous page printed.")] = None,
    state: MemoryStateOption = "active",
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """List Atomic Memory heads, newest first, one page at a time."""
    _print_page(_run(url, lambda c: c.list_memories(scope, limit, cursor, state)), as_json)  # type: ignore[arg-type]


@memory_app.command("get")
def memory_get(
    artifact_id: Annotated[str, typer.Argument()],
    scope: ScopeOption,
    revision: Annotated[int | None, typer.Option(min=1, help="An exact revision instead of the head.")] = None,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Read the head, or one exact revision, of an Atomic Memory."""
    _print_memory(_run(url, lambda c: c.get_memory(scope, artifact_id, revision)), as_json)


@memory_app.command("revise")
def memory_revise(
    artifact_id: Annotated[str, typer.Argument()],
    text: Annotated[str, typer.Argument()],
    scope: ScopeOption,
    expected_revision: Annotated[int, typer.Option(min=1, help="The head revision you are changing.")],
    kind: Annotated[
        str | None,
        typer.Option(metavar="KIND", parser=one_of(MEMORY_KINDS), help=f"New kind ({KINDS}); default keeps it."),
    ] = None,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Write a new revision (refused with revision-conflict if the head moved)."""
    memory = _run(url, lambda c: c.revise_memory(scope, artifact_id, expected_revision, text, kind))  # type: ignore[arg-type]
    _print_memory(memory, as_json)


def _lifecycle(action: str) -> Callable[..., None]:
    def command(
        artifact_id: Annotated[str, typer.Argument()],
        scope: ScopeOption,
        url: UrlOption = DEFAULT_URL,
        as_json: JsonOption = False,
    ) -> None:
        _print_memory(_run(url, lambda c: c.change_lifecycle(scope, artifact_id, action)), as_json)

    command.__doc__ = f"{action.capitalize()} an Atomic Memory (its revisions stay readable exactly)."
    return command


for _action in ("forget", "retire", "restore"):
    memory_app.command(_action)(_lifecycle(_action))

memory_app.add_typer(candidates_app, name="candidates")
memory_app.command("export")(memory_export)


@memory_app.command("purge")
def memory_purge(
    artifact_id: Annotated[str, typer.Argument()],
    scope: ScopeOption,
    yes: PurgeYesOption = False,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Erase every revision of an Atomic Memory for good (real deletion; a tombstone stays). Irreversible."""
    confirm_irreversible(f"purge {artifact_id} from {scope}: the text of every revision is erased for good", yes)
    purged = _run(url, lambda c: c.purge_memory(scope, artifact_id))
    if printed_as_json(purged, as_json):
        return
    say(f"purged {purged.artifact_id} from {purged.scope_id}: {purged.revisions} revision(s) erased")
