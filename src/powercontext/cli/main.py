"""The ``powercontext`` command.

Only Typer loads at start-up; the client, the server and Rich load inside the command that needs
them, so ``powercontext --help`` stays fast. Every command but ``server run`` and ``memory reindex``
talks HTTP to a running Server (``--url`` or ``POWERCONTEXT_URL``).
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated

import typer

from powercontext.cli.common import DEFAULT_URL, ConfigOption, JsonOption, ScopeOption, UrlOption
from powercontext.cli.common import print_json as _print_json
from powercontext.cli.terminal import say

# Plain help: Rich's help renderer alone costs ~180 ms per start, more than everything else together.
app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="PowerContext: prepared context for AI agents. Exit codes: 0 done, 1 refused, 2 usage, 3 not found, "
    "4 conflict, 5 Server unreachable, 6 store unusable (server run, memory reindex).",
)
# Each group's module and Typer, in the order ``powercontext --help`` lists them. A command line that names a
# group imports that module alone (``_app_for``): importing all of them costs a client command ~40 ms.
_GROUPS = {
    "server": ("powercontext.cli.server", "server_app"),
    "scope": ("powercontext.cli.scope", "scope_app"),
    "memory": ("powercontext.cli.memory", "memory_app"),
    "source": ("powercontext.cli.sources", "source_app"),
    "context": ("powercontext.cli.context", "context_app"),
    "store": ("powercontext.cli.store", "store_app"),
    "topic": ("powercontext.cli.families", "topic_app"),
    "experience": ("powercontext.cli.families", "experience_app"),
    "profile": ("powercontext.cli.families", "profile_app"),
    "code": ("powercontext.cli.code", "code_app"),
    "prompt": ("powercontext.cli.prompts", "prompt_app"),
    "eval": ("powercontext.cli.evaluate", "eval_app"),
    "hosts": ("powercontext.cli.hosts", "hosts_app"),
    "config": ("powercontext.cli.config", "config_app"),
}


def _group(name: str) -> typer.Typer:
    module, attribute = _GROUPS[name]
    group: typer.Typer = getattr(importlib.import_module(module), attribute)
    return group


@app.command("inspect")
def inspect(
    scope: ScopeOption,
    query: Annotated[str, typer.Option("--query", "-q", help="The request to inspect.")],
    max_bytes: Annotated[int, typer.Option(min=512, max=32768, help="Byte budget for the content.")] = 8000,
    url: UrlOption = DEFAULT_URL,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Print the address only.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Open the Context Inspector in a browser on the explained results of a Scope and a query.

    The address is the page's permalink: opening it runs the request. The Scope and query travel in the
    address's fragment, which the browser never sends to the Server.
    A token, when the Server needs one, is asked for on the page and kept only in that tab.
    """
    import webbrowser
    from urllib.parse import quote, urlencode

    _check_scope(url, scope)
    fragment = urlencode({"scope": scope, "q": query, "max_bytes": str(max_bytes), "run": "1"}, quote_via=quote)
    address = f"{url.rstrip('/')}/inspector#{fragment}"
    if as_json:
        _print_json({"url": address})
    else:
        say(address)
    if not no_browser and not webbrowser.open(address):
        say("no browser found here: open the address above in one", err=True)


def _check_scope(url: str, scope: str) -> None:
    """Refuse a Scope the Server does not have (or a Server that does not answer) before printing an address
    whose page would only say so. Without a token the Server accepts, the page asks for one: not checked here."""
    import contextlib

    from powercontext.cli.common import run
    from powercontext.client import PowerContextClient
    from powercontext.errors import Forbidden

    async def found(client: PowerContextClient) -> bool:
        with contextlib.suppress(Forbidden):
            await client.get_scope(scope)
        return True

    run(url, found)


def _show_version(value: bool) -> None:
    if value:
        from powercontext import __version__

        say(f"powercontext {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit."),
    ] = False,
    config: ConfigOption = None,
) -> None:
    """The file named by ``--config`` was applied before parsing (``_apply_config``)."""


def _app_for(args: list[str]) -> typer.Typer:
    """The whole ``app``, or, when ``args`` start with a group's name, an app holding that group alone.

    Typer builds the parameters of every registered command (some 130) before it parses anything: ~0.5 s of
    CPU per start. A command line names at most one group, so the others need not be imported nor built; the
    top-level help, ``--version``, ``mcp`` and ``inspect`` still get the whole app.
    """
    if args and args[0] in _GROUPS:
        alone = typer.Typer(rich_markup_mode=None)
        alone.callback()(_options)
        alone.add_typer(_group(args[0]), name=args[0])
        return alone
    if not app.registered_groups:
        from powercontext.cli.hosts import mcp_command

        for name in _GROUPS:
            app.add_typer(_group(name), name=name)
        app.command("mcp")(mcp_command)
    return app


def _apply_config(args: list[str]) -> None:
    """Read the settings file before anything parses its options: ``POWERCONTEXT_URL`` and the rest are
    resolved from the environment while the command line is read. ``--config FILE`` is taken wherever it
    stands (``powercontext --config F server run`` or ``powercontext server run --config F``)."""
    from powercontext.config_file import ConfigFileError, apply_config_file

    explicit = None
    for index, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--config" and index + 1 < len(args):
            explicit = args[index + 1]
        elif arg.startswith("--config="):
            explicit = arg.removeprefix("--config=")
    try:
        apply_config_file(explicit)
    except ConfigFileError as exc:
        say(f"error: config-file: {exc}", err=True)
        raise SystemExit(2) from None


def main() -> None:
    from powercontext.cli.tidy import tidy_metavars

    _apply_config(sys.argv[1:])
    command = typer.main.get_command(_app_for(sys.argv[1:]))
    tidy_metavars(command)
    try:
        command(prog_name="powercontext")
    except KeyboardInterrupt:
        sys.exit(130)
