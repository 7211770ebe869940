"""Human views for the CLI (Rich tables)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from powercontext.contract.prepare import PreparedContext
from powercontext.contract.receipt import PreparedContextReceipt, SelectedArtifact


def print_prepared(prepared: PreparedContext, asked_for_receipt: bool) -> None:
    """The content exactly as an agent gets it, then what the Receipt says about it."""
    console = Console()
    if prepared.status == "empty":
        console.print("[bold]empty[/bold]: nothing to inject for this request", highlight=False)
    else:
        console.print(prepared.content, markup=False, highlight=False, soft_wrap=True)
        console.print(f"\n[bold]{prepared.content_bytes}[/bold] bytes", highlight=False)
    receipt = prepared.receipt
    if receipt is None:
        if asked_for_receipt:
            console.print("no Receipt was returned (the Server could not build a valid one)", style="yellow")
        return
    console.print(_selected_table(receipt) if receipt.selected else "selected: none", highlight=False)
    if receipt.omitted:
        omitted = Table(title="Omitted")
        for column in ("family", "reason", "count"):
            omitted.add_column(column)
        for group in receipt.omitted:
            omitted.add_row(group.family, group.reason, str(group.count))
        console.print(omitted)
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


def _selected_table(receipt: PreparedContextReceipt) -> Table:
    table = Table(title="Selected (injection order)")
    for column in ("#", "family", "scope", "artifact", "rev", "bytes", "truncated"):
        table.add_column(column, overflow="fold")
    for number, item in enumerate(receipt.selected, start=1):
        if isinstance(item, SelectedArtifact):
            address = item.artifact_address
            ref = address.artifact
            scope_id, ident, rev = address.scope_id, ref.artifact_id, str(ref.revision)
        else:
            code = item.code_evidence
            scope_id, ident, rev = code.scope_id, f"{code.path}:{code.start_line}-{code.end_line}", "-"
        table.add_row(
            str(number), item.family, scope_id, ident, rev, str(item.rendered_bytes), "yes" if item.truncated else ""
        )
    return table
