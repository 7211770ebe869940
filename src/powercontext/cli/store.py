"""``powercontext store copy``: move every table of one store to another (e.g. SQLite → seekdb)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from powercontext.cli.common import JsonOption, print_json
from powercontext.cli.terminal import say

if TYPE_CHECKING:
    from powercontext.store.base import Store
    from powercontext.store.copy import TableCount
    from powercontext.store.location import StoreLocation

store_app = typer.Typer(no_args_is_help=True, help="Copy a store between backends.")


@store_app.command("copy")
def store_copy(
    source: Annotated[str, typer.Option("--from", help="Source store URL (sqlite:///…, seekdb:///…, oceanbase://…).")],
    target: Annotated[str, typer.Option("--to", help="Destination store URL; created if missing.")],
    batch_size: Annotated[int, typer.Option(min=1, max=10_000, help="Rows per destination transaction.")] = 500,
    as_json: JsonOption = False,
) -> None:
    """Copy everything, in resumable batches (rerun to resume), then compare row counts per table.

    Stop the Servers writing to the source first: rows written during the copy may be missed.
    """
    from powercontext.cli.failures import EXIT_CONFLICT, EXIT_UNREACHABLE
    from powercontext.store.copy import CopyFailed, DestinationNotFromSource

    from_location, to_location = _parse_locations(source, target)
    src, dst = _open_stores(from_location, to_location)
    try:
        counts = _copy_with_progress(src, dst, batch_size)
    except DestinationNotFromSource as exc:  # found before anything was written
        say(f"error: {exc.code}: {exc}", err=True)
        raise typer.Exit(EXIT_CONFLICT) from None
    except CopyFailed as exc:
        say(f"error: {exc.code}: {exc}", err=True)
        raise typer.Exit(EXIT_UNREACHABLE) from None
    finally:
        src.close()
        dst.close()
    if as_json:
        tables = [{"table": c.table, "source": c.source, "destination": c.destination} for c in counts]
        print_json({"tables": tables, "matches": all(c.matches for c in counts)})
    else:
        _print_counts(counts)
    if not all(c.matches for c in counts):
        say("error: row counts differ; rerun the same command to resume the copy", err=True)
        raise typer.Exit(1)
    if not as_json:
        say(f"copied {from_location.display()} to {to_location.display()}: every table matches")


def _parse_locations(source: str, target: str) -> tuple[StoreLocation, StoreLocation]:
    from powercontext.store.location import BadStoreUrl, parse_store_url

    try:
        from_location, to_location = parse_store_url(source), parse_store_url(target)
    except BadStoreUrl as exc:
        say(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if from_location == to_location:
        say("error: --from and --to name the same store", err=True)
        raise typer.Exit(2)
    return from_location, to_location


def _open_stores(from_location: StoreLocation, to_location: StoreLocation) -> tuple[Store, Store]:
    """The source, which must exist (nothing is created for a mistyped ``--from``), then the destination, created
    when new. One line and an exit code for each store that cannot be opened: 3 (``store-not-found``), 6 (damaged,
    read-only, not a store; as ``server run``), 2 (its engine is not installed or does not answer)."""
    from powercontext.cli.server import open_location_or_exit

    source = open_location_or_exit(from_location, "--from", create=False)
    try:
        return source, open_location_or_exit(to_location, "--to")
    except BaseException:
        source.close()
        raise


def _copy_with_progress(src: Store, dst: Store, batch_size: int) -> list[TableCount]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from powercontext.cli.rich_terminal import TerminalConsole
    from powercontext.code.identifiers import identifier_terms, path_terms
    from powercontext.store.copy import copy_store, refuse_foreign_rows

    refuse_foreign_rows(src, dst, batch_size)  # before the progress bar: a refusal is the only line

    def code_terms(path: str, text: str) -> tuple[str, str]:
        # The code indexer's own tokenizer, so copied chunks are found by the same queries.
        return " ".join(path_terms(path)), " ".join(identifier_terms(text))

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=TerminalConsole(stderr=True),  # stdout carries the result (and --json) only
    ) as bar:
        task = bar.add_task("copying", total=None)
        return copy_store(
            src,
            dst,
            code_terms,
            batch_size,
            progress=lambda table, done, total: bar.update(
                task, description=f"copying {table}", completed=done, total=total
            ),
            checked=True,
        )


def _print_counts(counts: list[Any]) -> None:
    say(f"{'table':<24}{'source':>10}{'destination':>14}")
    for count in counts:
        mark = "" if count.matches else "  MISMATCH"
        say(f"{count.table:<24}{count.source:>10}{count.destination:>14}{mark}")
