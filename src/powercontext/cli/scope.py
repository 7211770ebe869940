"""``powercontext scope``: create and list Scopes over HTTP."""

from __future__ import annotations

from typing import Annotated

import typer

from powercontext.cli.common import DEFAULT_URL, JsonOption, UrlOption, printed_as_json
from powercontext.cli.common import run as _run
from powercontext.cli.terminal import confirm_irreversible, say

scope_app = typer.Typer(no_args_is_help=True, help="Create, list and delete Scopes.")


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
    if printed_as_json(scope, as_json):
        return
    say(f"created Scope {scope.scope_id}")


@scope_app.command("list")
def scope_list(url: UrlOption = DEFAULT_URL, as_json: JsonOption = False) -> None:
    """List Scopes."""
    scopes = _run(url, lambda c: c.list_scopes())
    if printed_as_json(scopes, as_json):
        return
    for s in scopes:
        refs = f"  (references: {', '.join(s.context_references)})" if s.context_references else ""
        say(f"{s.scope_id}\t{s.title}{refs}")


@scope_app.command("delete")
def scope_delete(
    scope_id: Annotated[str, typer.Argument(help="The Scope to delete, with everything in it.")],
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Delete without asking (needed when not interactive).")
    ] = False,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Delete a Scope and everything in it, for good (needs the access file's delete grant). Irreversible."""
    confirm_irreversible(f"delete Scope {scope_id} and everything in it", yes)
    deleted = _run(url, lambda c: c.delete_scope(scope_id))
    if printed_as_json(deleted, as_json):
        return
    say(
        f"deleted Scope {deleted.scope_id}: {deleted.artifacts} artifact(s), {deleted.sources} source(s), "
        f"{deleted.code_chunks} code chunk(s)"
        + (f"; no longer referenced by {', '.join(deleted.referenced_by)}" if deleted.referenced_by else "")
    )
