"""``powercontext code``: index a work tree, query it, read exact ranges.

Like the other commands, these talk HTTP to a running Server, so ``code index`` sends an absolute
path for the Server to read (the CLI and the Server share a file system). ``code index --db FILE``
instead indexes in this process, straight into a store file, with a per-file progress bar.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from powercontext.cli.common import DEFAULT_URL, JsonOption, ScopeOption, UrlOption, printed_as_json
from powercontext.cli.terminal import say, terminal_safe

if TYPE_CHECKING:
    from powercontext.client import PowerContextClient
    from powercontext.contract.code import CodeIndexResult

MAX_FILE_BYTES = 16 << 20  # contract.code.MAX_MAX_FILE_BYTES, repeated so --help does not import pydantic

code_app = typer.Typer(no_args_is_help=True, help="Index work trees and query code evidence.")


@code_app.command("index")
def code_index(
    path: Annotated[Path, typer.Argument(help="A git work tree or a plain directory.")],
    scope: ScopeOption,
    max_file_bytes: Annotated[
        int | None, typer.Option(min=1, max=MAX_FILE_BYTES, help="Skip larger files (default 1 MiB).")
    ] = None,
    db: Annotated[
        Path | None, typer.Option(help="Index in this process into this store file instead of via the Server.")
    ] = None,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Register a work tree, or re-index it: unchanged files are skipped, deleted ones removed."""
    target = path.expanduser().resolve()
    result = (
        _index_in_process(db, scope, target, max_file_bytes)
        if db
        else _index_via_server(url, scope, target, max_file_bytes)
    )
    if as_json:
        from powercontext.cli.common import print_json as _print_json

        _print_json(result.model_dump(mode="json"))
        return
    say(
        f"work tree {result.fingerprint} ({result.kind}): {result.files_seen} files seen, "
        f"{result.files_indexed} indexed, {result.files_unchanged} unchanged, {result.files_removed} removed; "
        f"skipped {result.files_skipped_binary} binary, {result.files_skipped_large} large, "
        f"{result.files_skipped_other} other; {result.chunks} chunks"
    )


def _index_via_server(url: str, scope: str, target: Path, max_file_bytes: int | None) -> CodeIndexResult:
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from powercontext.cli.common import run as _run

    async def call(client: PowerContextClient) -> CodeIndexResult:
        # The Server answers once the run is complete: an elapsed-time spinner, not a bar.
        with Progress(
            SpinnerColumn(), TextColumn("indexing on the Server"), TimeElapsedColumn(), transient=True
        ) as bar:
            bar.add_task("index", total=None)
            return await client.index_code(scope, str(target), max_file_bytes)

    return _run(url, call)


def _index_in_process(db: Path, scope: str, target: Path, max_file_bytes: int | None) -> CodeIndexResult:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from powercontext.code.errors import CodeError
    from powercontext.code.indexer import CodeIndexer
    from powercontext.contract.code import DEFAULT_MAX_FILE_BYTES
    from powercontext.inference.config import EmbeddingConfig, build_embedding_provider
    from powercontext.search.embedding import GuardedEmbedder
    from powercontext.settings import code_hardlinks_allowed
    from powercontext.store.errors import StoreError, StoreNotFound
    from powercontext.store.location import StoreLocation
    from powercontext.store.open import require_existing
    from powercontext.store.sqlite import SqliteStore

    try:  # the Scope must be in the store: a new, empty store file could only fail, and would stay behind
        require_existing(StoreLocation("sqlite", path=db.expanduser()))
    except StoreNotFound as exc:
        from powercontext.cli.common import fail
        from powercontext.cli.failures import EXIT_NOT_FOUND

        raise fail(f"{exc.code}: {exc}", EXIT_NOT_FOUND) from None
    try:
        allow_hardlinks = code_hardlinks_allowed(os.environ)  # as the Server's setting, so both refuse alike
        provider = build_embedding_provider(EmbeddingConfig.from_env(os.environ))
    except ValueError as exc:
        say(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    # The same provider settings as the Server's, so chunks indexed here carry the vectors it searches.
    embed = GuardedEmbedder(provider).embed_for_write if provider.configured else None
    store = SqliteStore(db.expanduser())
    try:
        store.get_scope(scope)
        with Progress(
            TextColumn("indexing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), transient=True
        ) as bar:
            task = bar.add_task("index", total=None)

            def progress(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            indexer = CodeIndexer(store, embed=embed, allow_hardlinks=allow_hardlinks)
            report = indexer.index(
                scope, target, max_file_bytes=max_file_bytes or DEFAULT_MAX_FILE_BYTES, progress=progress
            )
    except (StoreError, CodeError) as exc:
        from powercontext.cli.common import local_failure

        raise local_failure(exc.code, exc.status, str(exc)) from None
    finally:
        store.close()
        provider.close()
    return report.to_wire()


@code_app.command("query")
def code_query(
    text: Annotated[str, typer.Argument(help="Identifiers or words, e.g. 'parseHttpResponse retry'.")],
    scope: ScopeOption,
    limit: Annotated[int, typer.Option(min=1, max=50)] = 10,
    show_text: Annotated[bool, typer.Option("--text/--no-text", help="Print each hit's lines.")] = True,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Search the indexed code of every work tree of the Scope."""
    from powercontext.cli.common import run as _run

    result = _run(url, lambda c: c.query_code(scope, text, limit))
    if printed_as_json(result, as_json):
        return
    say(f"{len(result.hits)} hit(s)")
    for hit in result.hits:
        ref = hit.code_evidence
        say(f"{hit.score:7.3f}  {ref.path}:{ref.start_line}-{ref.end_line}  [{hit.language}]  {ref.fingerprint}")
        if show_text:
            for line in hit.text.splitlines():
                say("    " + line)


@code_app.command("snippet")
def code_snippet(
    path: Annotated[str, typer.Argument(help="Repository-relative path, as a hit cites it.")],
    scope: ScopeOption,
    fingerprint: Annotated[str, typer.Option(help="The work tree's fingerprint.")],
    file_sha256: Annotated[str, typer.Option(help="The cited file_sha256 (sha256:<hex>).")],
    start_line: Annotated[int, typer.Option("--start", min=1, help="First line (1-based).")],
    end_line: Annotated[int, typer.Option("--end", min=1, help="Last line (inclusive).")],
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Print exact lines of an indexed file; refused with code-changed when the file has changed since."""
    from powercontext.cli.common import run as _run

    result = _run(url, lambda c: c.read_code_snippet(scope, fingerprint, path, file_sha256, start_line, end_line))
    if printed_as_json(result, as_json):
        return
    # Lines as they are, save what would act on the terminal (--json has them exact).
    sys.stdout.write(terminal_safe(result.text))
    sys.stdout.flush()
