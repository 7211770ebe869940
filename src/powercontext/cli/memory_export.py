"""``powercontext memory export``: a Scope's Atomic Memory as the JSONL that ``memory import`` reads.

A backup a person can read and a way to move memories between Scopes or Servers. Each line names its exact
revision in its idempotency key, so importing one export twice (an interrupted import, re-run) writes each memory
once. What an import cannot take is left out: ids, lifecycle state, lineage and revision history.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TextIO, cast

import typer

from powercontext.cli.common import (
    DEFAULT_URL,
    JsonOption,
    MemoryStateOption,
    ScopeOption,
    UrlOption,
    fail,
    print_json,
    run,
)
from powercontext.cli.failures import EXIT_USAGE
from powercontext.cli.terminal import say

if TYPE_CHECKING:
    from powercontext.client import PowerContextClient
    from powercontext.contract.memory import AtomicMemory, MemoryListState

PAGE = 200  # the list route's largest page


def import_line(memory: AtomicMemory) -> str:
    """One JSONL line ``memory import`` reads back into the same text, kind, tags and observed_at."""
    exact = memory.artifact_address.artifact
    line = {
        "text": memory.text,
        "kind": memory.kind,
        "tags": memory.tags,
        "observed_at": memory.observed_at,
        "idempotency_key": f"export:{exact.artifact_id}@{exact.revision}",
    }
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def memory_export(
    scope: ScopeOption,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", dir_okay=False, help="Write to this file instead of standard output."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace --out if it exists.")] = False,
    state: MemoryStateOption = "active",
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Write the Scope's Atomic Memory heads, newest first, as JSONL lines for ``memory import``.

    Each line holds text, kind, tags, observed_at and an idempotency key naming the exact revision, so
    importing the file twice writes each memory once. With --out the file appears whole or not at all.
    """
    if out is None and as_json:
        raise fail("--json needs --out: standard output carries the export itself", EXIT_USAGE)
    if out is not None and out.exists() and not force:
        raise fail(f"{out} exists; pass --force to replace it", EXIT_USAGE)
    count = run(url, _writer(scope, state, sys.stdout)) if out is None else _export_to_file(url, scope, state, out)
    if as_json:
        print_json({"scope_id": scope, "exported": count, "file": str(out)})
    elif out is not None or not sys.stdout.isatty():
        say(f"exported {count} memories from {scope}" + (f" to {out}" if out else ""), err=True)


def _export_to_file(url: str, scope: str, state: str, out: Path) -> int:
    """Write beside ``out`` and rename over it once every page is written: a failure leaves no partial file."""
    directory = out.resolve().parent
    if not directory.is_dir():
        raise fail(f"{directory} is not a directory", EXIT_USAGE)
    handle, temporary = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".part", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as sink:
            count = run(url, _writer(scope, state, sink))
        os.replace(temporary, out)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return count


def _writer(scope: str, state: str, sink: TextIO) -> Callable[[PowerContextClient], Awaitable[int]]:
    """The client call that writes every page of ``scope``'s heads in ``state`` to ``sink``; it returns the count."""
    listed = cast("MemoryListState", state)

    async def write_all(client: PowerContextClient) -> int:
        count, cursor = 0, None
        while True:
            page = await client.list_memories(scope, PAGE, cursor, listed)
            for memory in page.items:
                sink.write(import_line(memory) + "\n")
            count += len(page.items)
            cursor = page.next_cursor
            if cursor is None:
                return count

    return write_all
