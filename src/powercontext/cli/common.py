"""What every ``powercontext`` sub-command shares: options, one client call per command, JSON output.

Only Typer is imported here, so ``powercontext --help`` stays fast.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from powercontext.cli.choices import LIST_STATES, one_of
from powercontext.cli.failures import EXIT_CONFLICT as EXIT_CONFLICT
from powercontext.cli.failures import EXIT_NOT_FOUND as EXIT_NOT_FOUND
from powercontext.cli.failures import EXIT_REFUSED as EXIT_REFUSED
from powercontext.cli.failures import EXIT_UNREACHABLE as EXIT_UNREACHABLE
from powercontext.cli.failures import EXIT_USAGE as EXIT_USAGE
from powercontext.cli.failures import exit_code_for, told
from powercontext.cli.terminal import say
from powercontext.cli.wire_views import print_json as print_json
from powercontext.server_url import DEFAULT_URL as DEFAULT_URL

if TYPE_CHECKING:
    from pydantic import BaseModel

    from powercontext.client import PowerContextClient

T = TypeVar("T")


def checked_url(value: str) -> str:
    """``--url`` (or ``POWERCONTEXT_URL``) as a base URL, before any request: a URL without a scheme or with
    ``/v1`` would otherwise fail as "no answer" or "no such endpoint"."""
    from powercontext.server_url import BadServerUrl, check_server_url

    try:
        return check_server_url(value)
    except BadServerUrl as exc:
        raise fail(f"invalid-url: {exc}", EXIT_USAGE) from None


UrlOption = Annotated[
    str, typer.Option("--url", envvar="POWERCONTEXT_URL", callback=checked_url, help="Server base URL.")
]
_command_scope: list[str] = []  # the running command's --scope, for messages that name a command to type


def _remember_scope(value: str | None) -> str | None:
    if value:
        _command_scope[:] = [value]
    return value


ScopeOption = Annotated[
    str, typer.Option("--scope", "-s", callback=_remember_scope, help="Scope id, e.g. project:payments.")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the raw JSON answer.")]
PurgeYesOption = Annotated[
    bool, typer.Option("--yes", "-y", help="Purge without asking (needed when not interactive).")
]
MemoryStateOption = Annotated[
    str,
    typer.Option(metavar="STATE", parser=one_of(LIST_STATES), help="active, forgotten, retired, merged or all."),
]
ConfigOption = Annotated[
    str | None,
    typer.Option(
        "--config",
        metavar="FILE",
        help="A TOML settings file (default: powercontext.toml in the user data directory, or POWERCONTEXT_CONFIG).",
    ),
]
# No envvar here: Settings reads POWERCONTEXT_STORE itself, so --db still wins over the variable.
StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        help="Store URL: sqlite:///file.db, seekdb:///dir or oceanbase://user@host:port/db"
        " (default: POWERCONTEXT_STORE).",
    ),
]


def fail(message: str, code: int = EXIT_REFUSED) -> typer.Exit:
    """Print ``error: message`` on stderr; raise the returned ``Exit`` (code 1 unless told)."""
    say(f"error: {message}", err=True)
    return typer.Exit(code)


def client_for(url: str, timeout: float = 30.0) -> PowerContextClient:
    """The client a command uses: its one request at a time goes over a blocking transport, so a command never
    loads the async network stack (anyio's asyncio backend, a sizeable part of a short command's start-up).
    With a proxy configured it keeps the client's own transport, which honours the proxy settings."""
    import urllib.request

    import httpx

    from powercontext.client import PowerContextClient, _tls_verification
    from powercontext.client.sync import _BlockingTransport

    token = os.environ.get("POWERCONTEXT_TOKEN") or None
    if any(urllib.request.getproxies().values()):
        return PowerContextClient(url, token=token, timeout=timeout)
    transport = _BlockingTransport(httpx.HTTPTransport(verify=_tls_verification(url)))
    return PowerContextClient(url, token=token, timeout=timeout, transport=transport)


def run(url: str, call: Callable[[PowerContextClient], Awaitable[T]]) -> T:
    """Run one client call; a Server error or an invalid argument becomes a one-line message and the exit
    code of its class (``exit_code_for``)."""
    import asyncio

    from pydantic import ValidationError

    from powercontext.client import PowerContextError

    async def go() -> T:
        async with client_for(url) as client:
            return await call(client)

    try:
        return asyncio.run(go())
    except PowerContextError as exc:
        scope = next(iter(_command_scope), None)
        nearest = _nearest_scope(url, scope) if exc.code == "scope-not-found" and scope else None
        raise fail(told(exc, scope, nearest), exit_code_for(exc)) from None
    except ValidationError as exc:  # checked locally before sending; the value itself is not repeated
        from powercontext.contract.messages import describe_error

        raise fail(f"invalid-request: {describe_error(exc.errors()[0])}", EXIT_USAGE) from None


def _nearest_scope(url: str, scope: str) -> str | None:
    """The existing Scope id closest to ``scope`` (a likely typo), if one is close; None when none is or the
    Scopes cannot be listed."""
    import asyncio

    from powercontext.cli.choices import nearest_word
    from powercontext.client import PowerContextError

    async def scope_ids() -> list[str]:
        async with client_for(url) as client:
            return [s.scope_id for s in await client.list_scopes()]

    try:
        known = asyncio.run(scope_ids())
    except PowerContextError:
        return None
    return nearest_word(scope, known, cutoff=0.6)


def local_failure(code: str, status: int, message: str) -> typer.Exit:
    """Like a Server error, for a failure in this process (``code index --db``): same message, same exit code."""
    from powercontext.errors import error_for

    error = error_for(status, code, message)
    return fail(told(error, next(iter(_command_scope), None)), exit_code_for(error))


def printed_as_json(answer: BaseModel | Sequence[BaseModel], as_json: bool) -> bool:
    """With ``--json``, print the answer (a model, or a list of them) as JSON and return True: the command then
    prints nothing else. Without it, print nothing and return False."""
    if as_json:
        if isinstance(answer, Sequence):
            print_json([item.model_dump(mode="json") for item in answer])
        else:
            print_json(answer.model_dump(mode="json"))
    return as_json


def parse_section(text: str) -> dict[str, object]:
    """``--section FAMILY=LIMIT`` as an assembly section object."""
    family, sep, limit = text.partition("=")
    if not sep or not limit.strip().isdigit():
        raise fail(f"invalid-request: --section takes FAMILY=LIMIT, e.g. memory=6 (got {text!r})", EXIT_USAGE)
    return {"family": family.strip(), "limit": int(limit)}


M = TypeVar("M")


def context_request(
    model: Callable[[dict[str, object]], M],
    fields: dict[str, object],
    section: list[str] | None,
    include_code: bool,
) -> M:
    """A prepare-shaped request (``model`` is its ``model_validate``) from the context commands' options; a value
    the model refuses exits 2 with the model's own words."""
    from pydantic import ValidationError

    if include_code:
        fields["include_code"] = True
    if section is not None:
        fields["assembly"] = {"sections": [parse_section(s) for s in section]}
    try:
        return model(fields)
    except ValidationError as exc:
        from powercontext.contract.messages import describe_error, readable_errors

        errors = readable_errors(exc.errors(include_input=False))
        said = [_section_problem(e, section or []) for e in errors]
        message = "; ".join(s or describe_error(e) for e, s in zip(errors, said, strict=True) if s != "")
        raise fail(f"invalid-request: {message}", EXIT_USAGE) from None


def _section_problem(err: Mapping[str, Any], given: list[str]) -> str | None:
    """What is wrong with one ``--section``, in words; None for an error about something else, and "" for one
    another error of the same section already explains."""
    from powercontext.contract.prepare import SECTION_LIMITS

    loc = tuple(err.get("loc", ()))
    if loc[:2] != ("assembly", "sections"):
        return None
    if len(loc) < 3 or not isinstance(loc[2], int) or loc[2] >= len(given):
        return f"--section: {str(err.get('msg', 'invalid')).removeprefix('Value error, ')}"
    field = loc[3] if len(loc) > 3 else None
    where = f"--section {given[loc[2]]}"
    family = given[loc[2]].partition("=")[0].strip()
    if field == "family":
        code = " (code evidence comes with --include-code)" if family == "code" else ""
        return f"{where}: the family must be one of {', '.join(SECTION_LIMITS)}{code}"
    if field == "limit" or err.get("type") == "value_error":
        if family in SECTION_LIMITS:
            return f"{where}: the limit for {family} must be from 1 to {SECTION_LIMITS[family]}"
        return ""  # an unknown family: its own error says what to change
    return None
