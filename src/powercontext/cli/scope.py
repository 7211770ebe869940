"""``powercontext scope``: create and list Scopes over HTTP."""

from __future__ import annotations

from typing import Annotated

import typer

from powercontext.cli.common import DEFAULT_URL, JsonOption, UrlOption, printed_as_json
from powercontext.cli.common import run as _run
from powercontext.cli.terminal import say

scope_app = typer.Typer(no_args_is_help=True, help="Create and list Scopes.")


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
