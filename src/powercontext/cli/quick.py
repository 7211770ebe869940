"""The short route: ``memory add``, ``memory search`` and ``context prepare`` without Typer, pydantic or httpx.

Those three are what scripts and people run most, each as a fresh process. Loading Typer, pydantic's models and
httpx costs such a process about 200 ms before it sends anything (issue 41). This route reads the few options
it knows, sends the one request with the hooks' bounded POST (``http_post``: a total deadline, no ``http.client``)
and prints the answer with the views the full CLI uses (``cli.wire_views``), so the output is the same.

Anything else goes to the full CLI, unchanged: ``--help``, an option this route does not know (or ``--opt=value``,
or an option given twice), a value that looks like an option, ``https``, a proxy, an unusual URL. So does a request
that changed nothing: a read that failed or got an error answer, a write refused with a 4xx. The full CLI sends it
again and tells the error with every hint it has (the nearest Scope, the local check of a field). A write that
may have been applied is never sent twice: a transport failure or an error answer that is not a 4xx is told here,
in the full CLI's words (``cli.failures``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from powercontext.cli.choices import MEMORY_KINDS, SEARCH_MODES
from powercontext.cli.failures import exit_code_for, told
from powercontext.cli.terminal import say
from powercontext.cli.wire_views import print_created, print_json, print_plain_prepared, print_search
from powercontext.server_url import DEFAULT_URL

if TYPE_CHECKING:
    from powercontext.errors import PowerContextError

TIMEOUT_S = 30.0  # the full CLI's client timeout; here a total deadline (``http_post``)
# A failed write's cause, as httpx names it to the full CLI: no connection (refused, mostly), or the deadline.
_CAUSES = {"unavailable": "ConnectError", "timeout": "ReadTimeout"}


@dataclass(frozen=True)
class _Shape:
    """The command line one command takes on this route."""

    argument: str | None  # the name of its one positional argument, if it takes one
    options: dict[str, str]  # option -> field, for options that take a value
    required: tuple[str, ...]
    repeatable: frozenset[str] = frozenset()
    checks: dict[str, Callable[[str], bool]] = field(default_factory=dict)


def _integer_in(low: int, high: int) -> Callable[[str], bool]:
    return lambda value: value.isascii() and value.isdigit() and low <= int(value) <= high


_COMMON = {"-s": "scope", "--scope": "scope", "--url": "url"}
_SHAPES = {
    ("memory", "add"): _Shape(
        "text",
        {**_COMMON, "--kind": "kind", "--tag": "tag"},
        ("scope", "text"),
        frozenset({"tag"}),
        {"kind": MEMORY_KINDS.__contains__},
    ),
    ("memory", "search"): _Shape(
        "query",
        {**_COMMON, "--limit": "limit", "--mode": "mode"},
        ("scope", "query"),
        checks={"limit": _integer_in(1, 50), "mode": SEARCH_MODES.__contains__},
    ),
    ("context", "prepare"): _Shape(
        None,
        {**_COMMON, "-q": "query", "--query": "query", "--max-bytes": "max_bytes"},
        ("scope", "query"),
        checks={"max_bytes": _integer_in(512, 32768)},
    ),
}


@dataclass(frozen=True)
class QuickCommand:
    """A command line this route answers: which command, its values (``tag`` a list), and ``--json``."""

    command: tuple[str, str]
    values: dict[str, Any]
    as_json: bool


def parse(args: list[str]) -> QuickCommand | None:
    """The command line as a ``QuickCommand``, or None when the full CLI should read it."""
    shape = _SHAPES.get((args[0], args[1])) if len(args) >= 2 else None
    if shape is None:
        return None
    values: dict[str, Any] = {}
    as_json = False
    rest = iter(args[2:])
    for token in rest:
        if token == "--json" and not as_json:
            as_json = True
            continue
        if token.startswith("-"):
            name = shape.options.get(token)
            value = next(rest, None)
            if name is None or value is None:
                return None
        else:
            name, value = shape.argument, token
            if name is None:
                return None
        if not value or value.startswith("-") or not shape.checks.get(name, bool)(value):
            return None
        if name in shape.repeatable:
            values.setdefault(name, []).append(value)
        elif name in values:
            return None
        else:
            values[name] = value
    if any(name not in values for name in shape.required):
        return None
    return QuickCommand((args[0], args[1]), values, as_json)


class _Unanswered(Exception):
    """The request could not be sent here; the full CLI is to run it."""


def answer(args: list[str]) -> int | None:
    """Run ``args`` on this route and return the exit code, or None when the full CLI is to run them."""
    command = parse(args)
    if command is None:
        return None
    from powercontext.config_file import ConfigFileError, apply_config_file

    try:
        apply_config_file()
    except ConfigFileError:
        return None  # the full CLI says what is wrong with the file
    base = _base_url(command.values.get("url"))
    if base is None:
        return None
    try:
        return _run(command, base)
    except _Unanswered:
        return None


def _base_url(option: str | None) -> str | None:
    """The Server's base URL, when it is a plain ``http`` one this route may use without a proxy."""
    from powercontext.server_url import BadServerUrl, check_server_url

    value = option if option is not None else os.environ.get("POWERCONTEXT_URL")
    if value is None:
        value = DEFAULT_URL
    if not value.strip() or any(v for k, v in os.environ.items() if k.lower().endswith("_proxy")):
        return None
    try:
        base = check_server_url(value)
    except BadServerUrl:
        return None
    parts = urlsplit(base)
    if parts.scheme != "http" or parts.username is not None or parts.password is not None:
        return None
    return base


def _run(command: QuickCommand, base: str) -> int:
    values = command.values
    scope = values["scope"]
    memory = f"/v1/scopes/{quote(scope, safe=':@+=~.-_')}/atomic-memory"
    if command.command == ("memory", "add"):
        body: dict[str, Any] = {
            "text": values["text"],
            "kind": values.get("kind", "fact"),
            "tags": values.get("tag", []),
        }
        path, is_write = memory, True
    elif command.command == ("memory", "search"):
        body = {"query": values["query"], "mode": values.get("mode", "auto"), "limit": int(values.get("limit", 10))}
        path, is_write = f"{memory}/search", False
    else:
        body = {"scope_id": scope, "query": values["query"], "max_bytes": int(values.get("max_bytes", 8000))}
        path, is_write = "/v1/context/prepare", False
    from powercontext.errors import error_from_answer, unreachable
    from powercontext.http_post import TransportFailure, post_json
    from powercontext.text.urls import mask_credentials

    token = os.environ.get("POWERCONTEXT_TOKEN", "").strip() or None
    try:
        answered = post_json(base, path, body, token=token, timeout_s=TIMEOUT_S)
    except UnicodeEncodeError:
        raise _Unanswered from None  # undecodable bytes in an argument: the full CLI refuses them
    except TransportFailure as exc:
        if exc.kind == "bad_url" or (not is_write and exc.kind != "timeout"):
            raise _Unanswered from None  # nothing was sent, or a read: the full CLI sends it again and tells
        # A write may have been applied: never sent again; told in the words httpx gives the full CLI.
        return _tell(unreachable(mask_credentials(base), _CAUSES.get(exc.kind, "RemoteProtocolError")), scope)
    status, raw = answered.status, answered.body
    if status >= 400:
        if status < 500 or not is_write:
            raise _Unanswered
        return _tell(error_from_answer(status, raw, path, mask_credentials(base)), scope)
    try:
        result = json.loads(raw)
    except ValueError:
        raise _Unanswered from None  # not our Server's answer: the full CLI tells what it is
    if command.as_json:
        print_json(result)
    elif command.command == ("memory", "add"):
        print_created(result, scope)
    elif command.command == ("memory", "search"):
        print_search(result)
    else:
        print_plain_prepared(result)
    return 0


def _tell(error: PowerContextError, scope: str) -> int:
    say(f"error: {told(error, scope)}", err=True)
    return exit_code_for(error)
