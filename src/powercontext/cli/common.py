"""What every ``powercontext`` sub-command shares: options, one client call per command, JSON output.

Only Typer is imported here, so ``powercontext --help`` stays fast.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

if TYPE_CHECKING:
    from powercontext.client import PowerContextClient

DEFAULT_URL = "http://127.0.0.1:8765"
T = TypeVar("T")

UrlOption = Annotated[str, typer.Option("--url", envvar="POWERCONTEXT_URL", help="Server base URL.")]
ScopeOption = Annotated[str, typer.Option("--scope", "-s", help="Scope id, e.g. project:payments.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the raw JSON answer.")]
# No envvar here: Settings reads POWERCONTEXT_STORE itself, so --db still wins over the variable.
StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="Store URL: sqlite:///file.db, seekdb:///dir or oceanbase://user@host:port/db"
        " (default: POWERCONTEXT_STORE).",
    ),
]


def fail(message: str) -> typer.Exit:
    """Print ``error: message`` on stderr; raise the returned ``Exit`` (code 1)."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(1)


def run(url: str, call: Callable[[PowerContextClient], Awaitable[T]]) -> T:
    """Run one client call; a Server error or an invalid argument becomes a one-line message and exit code 1."""
    import asyncio

    from pydantic import ValidationError

    from powercontext.client import PowerContextClient, PowerContextError

    async def go() -> T:
        async with PowerContextClient(url, token=os.environ.get("POWERCONTEXT_TOKEN") or None) as client:
            return await call(client)

    try:
        return asyncio.run(go())
    except PowerContextError as exc:
        raise fail(f"{exc.code}: {exc.message}") from None
    except ValidationError as exc:  # checked locally before sending; the value itself is not repeated
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "input"
        raise fail(f"invalid-request: {where}: {first['msg']}") from None


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, ensure_ascii=False, indent=2))
