"""Human views for the CLI (Rich tables, loaded only when there is a Receipt to draw)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from powercontext.cli.terminal import say
from powercontext.cli.wire_views import print_plain_prepared

if TYPE_CHECKING:
    from powercontext.cli.rich_terminal import TerminalConsole
    from powercontext.contract.prepare import PreparedContext
    from powercontext.contract.receipt import PreparedContextReceipt


def print_prepared(prepared: PreparedContext, asked_for_receipt: bool) -> None:
    """The content exactly as an agent gets it, then what the Receipt says about it."""
    if prepared.receipt is None:
        # Nothing to tabulate: plain lines, so the common ``context prepare`` does not load Rich (~30 ms).
        print_plain_prepared(prepared.model_dump(mode="json"))
        if asked_for_receipt:
            say("no Receipt was returned (the Server could not build a valid one)")
        return
    _print_with_receipt(prepared, prepared.receipt)


def _print_with_receipt(prepared: PreparedContext, receipt: PreparedContextReceipt) -> None:
    from rich.table import Table

    from powercontext.cli.rich_terminal import TerminalConsole

    console = TerminalConsole()
    if not console.is_terminal:
        # Piped or redirected: no terminal width to fit, so lines are never broken (ids stay whole for grep/copy).
        console = TerminalConsole(width=_UNBOUNDED_WIDTH)
    if prepared.status == "empty":
        console.print("[bold]empty[/bold]: nothing to inject for this request", highlight=False)
    else:
        console.print(prepared.content, markup=False, highlight=False, soft_wrap=True)
        console.print(f"\n[bold]{prepared.content_bytes}[/bold] bytes", highlight=False)
    if receipt.selected:
        _print_selected(console, receipt)
    else:
        console.print("selected: none", highlight=False)
    # ``not_retrieved`` is a flag (count 1: the family produced no candidates, often because the Scope stores none
    # of it), not a number of omitted items: it is named on its own line instead of counted in the table.
    counted = [g for g in receipt.omitted if g.reason != "not_retrieved"]
    found_nothing = [g.family for g in receipt.omitted if g.reason == "not_retrieved"]
    if counted:
        omitted = Table(title="Omitted")
        for column in ("family", "reason", "count"):
            omitted.add_column(column)
        for group in counted:
            omitted.add_row(group.family, group.reason, str(group.count))
        console.print(omitted)
    if found_nothing:
        console.print(f"no candidates (none stored or none matched): {', '.join(found_nothing)}", highlight=False)
    searches = ", ".join(
        f"{g.family}/{g.mode}/{g.outcome}"
        + (f" ({g.fallback_reason})" if g.fallback_reason != "none" else "")
        + f" x{g.count}"
        for g in receipt.retrieval.searches
    )
    console.print(f"searches: {searches or 'none'}", highlight=False)
    console.print(
        f"budget: {receipt.used_bytes}/{receipt.requested_max_bytes} bytes, truncated: {receipt.truncated}, "
        f"receipt_id: {receipt.receipt_id}",
        highlight=False,
    )


def _print_selected(console: TerminalConsole, receipt: PreparedContextReceipt) -> None:
    """A table when it fits the terminal, else one line per item: an id is never broken across lines."""
    from rich.table import Table

    from powercontext.cli.rich_terminal import safe_text

    rows = _selected_rows(receipt)
    widths = [max(len(header), *(len(row[i]) for row in rows)) for i, header in enumerate(_SELECTED_COLUMNS)]
    if sum(widths) + 3 * len(widths) + 1 <= console.width:
        table = Table(title="Selected (injection order)")
        for header, width in zip(_SELECTED_COLUMNS, widths, strict=True):
            table.add_column(header, no_wrap=True, min_width=width)
        for row in rows:
            table.add_row(*(safe_text(cell) for cell in row))  # ids are data, never Rich markup
        console.print(table)
        return
    console.print("Selected (injection order):", highlight=False)
    for number, family, scope_id, ident, rev, size, truncated in rows:
        line = f"{number}. {family} {scope_id} {ident} rev {rev}, {size} bytes" + (", truncated" if truncated else "")
        console.print(line, markup=False, highlight=False, soft_wrap=True)


_SELECTED_COLUMNS = ("#", "family", "scope", "artifact", "rev", "bytes", "truncated")
_UNBOUNDED_WIDTH = 100_000


def _selected_rows(receipt: PreparedContextReceipt) -> list[tuple[str, str, str, str, str, str, str]]:
    from powercontext.contract.receipt import SelectedArtifact

    rows: list[tuple[str, str, str, str, str, str, str]] = []
    for number, item in enumerate(receipt.selected, start=1):
        if isinstance(item, SelectedArtifact):
            address = item.artifact_address
            ref = address.artifact
            scope_id, ident, rev = address.scope_id, ref.artifact_id, str(ref.revision)
        else:
            code = item.code_evidence
            scope_id, ident, rev = code.scope_id, f"{code.path}:{code.start_line}-{code.end_line}", "-"
        rows.append(
            (str(number), item.family, scope_id, ident, rev, str(item.rendered_bytes), "yes" if item.truncated else "")
        )
    return rows
