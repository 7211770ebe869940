"""``powercontext context``: prepare the context an agent would receive, and explain it."""

from __future__ import annotations

from typing import Annotated

import typer

from powercontext.cli.common import DEFAULT_URL, JsonOption, ScopeOption, UrlOption, context_request, printed_as_json
from powercontext.cli.common import run as _run
from powercontext.cli.explain import context_explain

context_app = typer.Typer(no_args_is_help=True, help="Prepare context for a request.")


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
    if printed_as_json(prepared, as_json):
        return
    from powercontext.cli.views import print_prepared

    print_prepared(prepared, include_receipt)


context_app.command("explain")(context_explain)
