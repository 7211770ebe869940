"""The ``powercontext`` command.

Only Typer loads at start-up; the client, the server and Rich load inside the command that needs
them, so ``powercontext --help`` stays fast. Every command but ``server run`` and ``memory reindex``
talks HTTP to a running Server (``--url`` or ``POWERCONTEXT_URL``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from powercontext.cli.code import code_app
from powercontext.cli.common import DEFAULT_URL, JsonOption, ScopeOption, StoreOption, UrlOption, context_request
from powercontext.cli.common import print_json as _print_json
from powercontext.cli.common import run as _run
from powercontext.cli.evaluate import eval_app
from powercontext.cli.explain import context_explain
from powercontext.cli.families import experience_app, profile_app, topic_app
from powercontext.cli.hosts import hosts_app, mcp_command
from powercontext.cli.prompts import prompt_app
from powercontext.cli.store import store_app

if TYPE_CHECKING:
    from powercontext.client import PowerContextClient
    from powercontext.contract.memory import AtomicMemory
    from powercontext.settings import Settings

IMPORT_BATCH = 500
KINDS = "decision, constraint, fact, state, next-step, outcome, note"
app = typer.Typer(
    no_args_is_help=True,
    help="PowerContext: prepared context for AI agents. Exit codes: 0 done, 1 refused, 2 usage, 3 not found, "
    "4 conflict, 5 Server unreachable.",
)
server_app = typer.Typer(no_args_is_help=True, help="Run the Server.")
scope_app = typer.Typer(no_args_is_help=True, help="Create and list Scopes.")
memory_app = typer.Typer(no_args_is_help=True, help="Write, search and read Atomic Memory.")
context_app = typer.Typer(no_args_is_help=True, help="Prepare context for a request.")
app.add_typer(server_app, name="server")
app.add_typer(scope_app, name="scope")
app.add_typer(memory_app, name="memory")
app.add_typer(context_app, name="context")
app.add_typer(store_app, name="store")
app.add_typer(topic_app, name="topic")
app.add_typer(experience_app, name="experience")
app.add_typer(profile_app, name="profile")
app.add_typer(code_app, name="code")
app.add_typer(prompt_app, name="prompt")
app.add_typer(eval_app, name="eval")
app.add_typer(hosts_app, name="hosts")
app.command("mcp")(mcp_command)


def _print_memory(memory: AtomicMemory, as_json: bool) -> None:
    if as_json:
        _print_json(memory.model_dump(mode="json"))
        return
    ref = memory.artifact_address.artifact
    typer.echo(
        f"{ref.artifact_id} revision {ref.revision} (head {memory.head_revision}, {memory.state}, {memory.kind},"
        f" observed {memory.observed_at[:10]})"
    )
    if memory.merged_into:
        typer.echo(f"merged into {memory.merged_into}")
    typer.echo(memory.text)


# -- server ------------------------------------------------------------------------------------


@server_app.command("run")
def server_run(
    db: Annotated[
        Path | None, typer.Option(help="SQLite file. Default: the user data dir, or POWERCONTEXT_DB.")
    ] = None,
    host: Annotated[str | None, typer.Option(help="Interface to bind (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default 8765).")] = None,
    store: StoreOption = None,
) -> None:
    """Run the Server on the configured store (SQLite by default) until interrupted."""
    from powercontext.server.auth import AccessFileError
    from powercontext.server.run import serve
    from powercontext.store.oceanbase.engine import EngineUnavailable

    settings = _settings(db, host, port, store)
    where = settings.store_location().display()
    typer.echo(f"PowerContext on http://{settings.host}:{settings.port}  (store: {where})", err=True)
    try:
        serve(settings)
    except AccessFileError as exc:
        typer.echo(f"error: POWERCONTEXT_ACCESS_FILE: {exc}", err=True)
        raise typer.Exit(2) from None
    except EngineUnavailable as exc:
        typer.echo(f"error: POWERCONTEXT_STORE: {exc}", err=True)
        raise typer.Exit(2) from None


# -- scopes ------------------------------------------------------------------------------------


@scope_app.command("create")
def scope_create(
    scope_id: Annotated[str, typer.Argument(help="New Scope id, e.g. project:payments.")],
    title: Annotated[str | None, typer.Option(help="Human title (default: the id).")] = None,
    reference: Annotated[
        list[str] | None, typer.Option("--reference", help="A Scope whose memories prepare also recalls.")
    ] = None,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Create a Scope."""
    scope = _run(url, lambda c: c.create_scope(scope_id, title or scope_id, reference or []))
    if as_json:
        _print_json(scope.model_dump(mode="json"))
        return
    typer.echo(f"created Scope {scope.scope_id}")


@scope_app.command("list")
def scope_list(url: UrlOption = DEFAULT_URL, as_json: JsonOption = False) -> None:
    """List Scopes."""
    scopes = _run(url, lambda c: c.list_scopes())
    if as_json:
        _print_json([s.model_dump(mode="json") for s in scopes])
        return
    for s in scopes:
        refs = f"  (references: {', '.join(s.context_references)})" if s.context_references else ""
        typer.echo(f"{s.scope_id}\t{s.title}{refs}")


# -- memory ------------------------------------------------------------------------------------


@memory_app.command("add")
def memory_add(
    text: Annotated[str, typer.Argument(help="The memory: one short, self-contained statement.")],
    scope: ScopeOption,
    kind: Annotated[str, typer.Option(help=f"One of: {KINDS}.")] = "fact",
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A tag (repeatable).")] = None,
    idempotency_key: Annotated[str | None, typer.Option(help="Retry-safe key.")] = None,
    observed_at: Annotated[
        str | None,
        typer.Option(help="When it was true, if not now: an RFC 3339 date or date-time (2025-07-16T09:30:00Z)."),
    ] = None,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Add one Atomic Memory; says which earlier memories it may replace."""
    memory = _run(
        url,
        lambda c: c.add_memory(scope, text, kind, tag or [], idempotency_key, observed_at),  # type: ignore[arg-type]
    )
    _print_memory(memory, as_json)
    if as_json or not memory.possibly_supersedes:
        return
    typer.echo("\nThis may replace earlier memories on the same subject (nothing was changed):")
    for artifact_id in memory.possibly_supersedes:
        typer.echo(f"  {artifact_id}: if it is outdated, run  powercontext memory retire {artifact_id} -s {scope}")


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
    from powercontext.store.open import open_store

    settings = _settings(db, store=store_url)
    provider = build_embedding_provider(settings.embeddings)
    if not provider.configured:
        typer.echo("error: no embedding provider is configured; set POWERCONTEXT_EMBEDDINGS (see docs)", err=True)
        raise typer.Exit(2)
    store = open_store(settings.store_location())
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
        typer.echo(f"error: {exc.reason}: the provider failed; finished batches are kept, rerun to continue", err=True)
        raise typer.Exit(1) from None
    finally:
        store.close()
        provider.close()
    if as_json:
        _print_json({"embedded": report.embedded, "remaining": report.remaining, "model_id": provider.model_id})
        return
    typer.echo(f"embedded {report.embedded} memories with {provider.model_id}; {report.remaining} still without one")


def _settings(
    db: Path | None, host: str | None = None, port: int | None = None, store: str | None = None
) -> Settings:
    from powercontext.settings import Settings

    try:
        return Settings.from_env(db=str(db) if db else None, host=host, port=port, store=store)
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


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
    import hashlib

    from pydantic import ValidationError
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from powercontext.contract.memory import AtomicMemoryCreate

    content = file.read_bytes()
    file_key = hashlib.sha256(content).hexdigest()
    items: list[AtomicMemoryCreate] = []
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        typer.echo(f"error: {file}: not UTF-8 text; nothing was imported", err=True)
        raise typer.Exit(1) from None
    # Split on "\n" only: JSON strings may hold U+2028 and other characters str.splitlines() breaks on.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            item = AtomicMemoryCreate.model_validate_json(line)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "line"
            typer.echo(f"error: {file}:{number}: {where}: {first['msg']}; nothing was imported", err=True)
            raise typer.Exit(1) from None
        if item.idempotency_key is None:
            item = item.model_copy(update={"idempotency_key": import_key(file_key, number)})
        items.append(item)
    if not items:
        typer.echo("nothing to import", err=True)
        if as_json:
            _print_json({"scope_id": scope, "imported": 0, "existed": 0})
        return

    async def upload(client: PowerContextClient) -> tuple[int, int]:
        written = existed = 0
        with Progress(
            TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), transient=True
        ) as bar:
            task = bar.add_task("import", total=len(items))
            for start in range(0, len(items), IMPORT_BATCH):
                batch = items[start : start + IMPORT_BATCH]
                answered = await client.add_memories(scope, batch)
                replayed = sum(1 for item in answered if item.replayed)
                existed += replayed
                written += len(answered) - replayed
                bar.update(task, advance=len(batch))
        return written, existed

    try:
        written, existed = _run(url, upload)
    except typer.Exit:
        typer.echo("the failed batch wrote nothing; earlier batches were kept; re-run to resume safely", err=True)
        raise
    if as_json:
        _print_json({"scope_id": scope, "imported": written, "existed": existed})
        return
    typer.echo(f"imported {written} memories into {scope}; {existed} already existed")


def import_key(file_sha256: str, line_number: int) -> str:
    """The idempotency key of line ``line_number`` of a file whose content has this SHA-256 (hex)."""
    return f"import:{file_sha256}:{line_number}"


@memory_app.command("search")
def memory_search(
    query: Annotated[str, typer.Argument()],
    scope: ScopeOption,
    limit: Annotated[int, typer.Option(min=1, max=50)] = 10,
    mode: Annotated[str, typer.Option(help="auto or fts (vector and hybrid need a provider).")] = "auto",
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Search active Atomic Memory heads."""
    result = _run(url, lambda c: c.search_memory(scope, query, mode, limit))  # type: ignore[arg-type]
    if as_json:
        _print_json(result.model_dump(mode="json"))
        return
    typer.echo(f"mode {result.mode}, {len(result.hits)} hit(s)")
    for hit in result.hits:
        ref = hit.artifact_address.artifact
        typer.echo(f"{hit.score:7.3f}  {ref.artifact_id}@{ref.revision}  [{hit.kind}]  {hit.text}")


@memory_app.command("list")
def memory_list(
    scope: ScopeOption,
    limit: Annotated[int, typer.Option(min=1, max=200, help="Memories per page.")] = 20,
    cursor: Annotated[str | None, typer.Option(help="The next_cursor a previous page printed.")] = None,
    state: Annotated[str, typer.Option(help="active, forgotten, retired, merged or all.")] = "active",
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """List Atomic Memory heads, newest first, one page at a time."""
    page = _run(url, lambda c: c.list_memories(scope, limit, cursor, state))  # type: ignore[arg-type]
    if as_json:
        _print_json(page.model_dump(mode="json"))
        return
    for memory in page.items:
        ref = memory.artifact_address.artifact
        typer.echo(f"{ref.artifact_id}@{ref.revision}  [{memory.kind}]  {memory.state}  {memory.text}")
    if page.next_cursor is not None:
        typer.echo(f"more: --cursor {page.next_cursor}", err=True)


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
    kind: Annotated[str | None, typer.Option(help=f"New kind ({KINDS}); default keeps it.")] = None,
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


# -- context -----------------------------------------------------------------------------------


@context_app.command("prepare")
def context_prepare(
    scope: ScopeOption,
    query: Annotated[str, typer.Option("--query", "-q", help="The request the agent is about to handle.")],
    max_bytes: Annotated[int, typer.Option(min=512, max=32768, help="Byte budget for the content.")] = 8000,
    include_receipt: Annotated[bool, typer.Option(help="Also ask for the content-free Receipt.")] = False,
    section: Annotated[
        list[str] | None,
        typer.Option(
            "--section",
            help="An explicit assembly section FAMILY=LIMIT, in priority order (repeatable); families: memory, "
            "topic-memory, experience, profile. Without it: the default recall.",
        ),
    ] = None,
    include_code: Annotated[bool, typer.Option(help="Add up to 4 exact code ranges.")] = False,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Prepare the context an agent would receive, and optionally explain it."""
    from powercontext.contract.prepare import PrepareContextRequest

    fields: dict[str, object] = {"scope_id": scope, "query": query, "max_bytes": max_bytes}
    if include_receipt:
        fields["include_receipt"] = True
    request = context_request(PrepareContextRequest.model_validate, fields, section, include_code)
    prepared = _run(url, lambda c: c.prepare_context(request))
    if as_json:
        _print_json(prepared.model_dump(mode="json"))
        return
    from powercontext.cli.views import print_prepared

    print_prepared(prepared, include_receipt)


context_app.command("explain")(context_explain)


@app.command("inspect")
def inspect(
    scope: ScopeOption,
    query: Annotated[str, typer.Option("--query", "-q", help="The request to inspect.")],
    max_bytes: Annotated[int, typer.Option(min=512, max=32768, help="Byte budget for the content.")] = 8000,
    url: UrlOption = DEFAULT_URL,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Print the address only.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Open the Context Inspector in a browser on the explained results of a Scope and a query.

    The address is the page's permalink: opening it runs the request. The Scope and query travel in the
    address's fragment, which the browser never sends to the Server.
    A token, when the Server needs one, is asked for on the page and kept only in that tab.
    """
    import webbrowser
    from urllib.parse import quote, urlencode

    fragment = urlencode({"scope": scope, "q": query, "max_bytes": str(max_bytes), "run": "1"}, quote_via=quote)
    address = f"{url.rstrip('/')}/inspector#{fragment}"
    if as_json:
        _print_json({"url": address})
    else:
        typer.echo(address)
    if not no_browser and not webbrowser.open(address):
        typer.echo("no browser found here: open the address above in one", err=True)


def _show_version(value: bool) -> None:
    if value:
        from powercontext import __version__

        typer.echo(f"powercontext {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    pass


def main() -> None:
    from powercontext.cli.tidy import tidy_metavars

    command = typer.main.get_command(app)
    tidy_metavars(command)
    try:
        command(prog_name="powercontext")
    except KeyboardInterrupt:
        sys.exit(130)
