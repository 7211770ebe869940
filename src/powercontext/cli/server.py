"""``powercontext server``: run the Server, and the settings every store-side command starts from."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from powercontext.cli.common import ConfigOption, StoreOption
from powercontext.cli.terminal import say

if TYPE_CHECKING:
    from powercontext.settings import Settings
    from powercontext.store.base import Store
    from powercontext.store.location import StoreLocation

# ``server run``'s exit code for a store it cannot use (docs/cli.md, Exit codes).
STORE_REFUSED_EXIT = 6

server_app = typer.Typer(no_args_is_help=True, help="Run the Server.")


@server_app.command("run")
def server_run(
    db: Annotated[
        Path | None, typer.Option(help="SQLite file. Default: the user data dir, or POWERCONTEXT_DB.")
    ] = None,
    host: Annotated[str | None, typer.Option(help="Interface to bind (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(min=1, max=65535, help="Port, 1-65535 (default 8765).")] = None,
    store: StoreOption = None,
    config: ConfigOption = None,
) -> None:
    """Run the Server on the configured store (SQLite by default) until interrupted.

    Settings come from the options, then the environment, then the settings file (see config show).
    """
    from powercontext.server.auth import AccessFileError
    from powercontext.server.run import serve
    from powercontext.store.errors import StoreOpenRefused
    from powercontext.store.oceanbase.engine import EngineUnavailable

    settings = settings_from_options(db, host, port, store)
    refuse_unusable_address(settings.host, settings.port, "--host" if host and host.strip() else "POWERCONTEXT_HOST")
    where = settings.store_location().display()
    label = store_setting(db, store)

    def announce() -> None:  # once the store is open: a refused store prints its error alone
        say(f"PowerContext on http://{url_host(settings.host)}:{settings.port}  (store: {where})", err=True)

    try:
        serve(settings, announce)
    except StoreOpenRefused as exc:
        fail(STORE_REFUSED_EXIT, f"{label}: {exc}")
    except AccessFileError as exc:
        fail(2, f"POWERCONTEXT_ACCESS_FILE: {exc}")
    except EngineUnavailable as exc:
        fail(2, f"{label}: {exc}")


def fail(code: int, message: str) -> NoReturn:
    """End the command with ``error: message`` on one line, naming a setting the settings file supplied by its
    file and key (``config_file.as_written``), and exit code ``code``."""
    from powercontext.config_file import as_written

    say(f"error: {as_written(message)}", err=True)
    raise typer.Exit(code)


def url_host(host: str) -> str:
    """``host`` as a URL writes it: an IPv6 address in brackets (``http://[::1]:8765``)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def store_setting(db: Path | None, store: str | None) -> str:
    """The option or variable that named the store, as ``Settings.from_env`` picks it: an error names it."""
    import os

    if store:
        return "--store"
    if db:
        return "--db"
    if not os.environ.get("POWERCONTEXT_STORE") and os.environ.get("POWERCONTEXT_DB"):
        return "POWERCONTEXT_DB"
    return "POWERCONTEXT_STORE"


def settings_from_options(
    db: Path | None, host: str | None = None, port: int | None = None, store: str | None = None
) -> Settings:
    """The Server settings from the environment and a command's own options; a bad value exits with code 2."""
    from powercontext.settings import Settings

    try:
        return Settings.from_env(db=str(db) if db else None, host=host, port=port, store=store)
    except ValueError as exc:
        fail(2, str(exc))


def open_store_or_exit(settings: Settings, *, create: bool = True) -> Store:
    """The configured store, opened by a command that works on it directly; one it cannot use ends the command
    as it ends ``server run`` (``open_location_or_exit``)."""
    return open_location_or_exit(settings.store_location(), "POWERCONTEXT_STORE", create=create)


def open_location_or_exit(location: StoreLocation, label: str, *, create: bool = True) -> Store:
    """The store at ``location``; one it cannot use ends the command with one line naming ``label`` (the setting
    or option that named it) and the exit code of ``server run``: 6 (damaged, read-only, not a store), or 2 when
    its engine is not installed or does not answer. With ``create=False`` a store that is not there is not
    created: ``store-not-found``, exit 3. Never a traceback."""
    from powercontext.cli.failures import EXIT_NOT_FOUND
    from powercontext.store.errors import StoreNotFound, StoreOpenRefused
    from powercontext.store.oceanbase.engine import EngineUnavailable
    from powercontext.store.open import open_store

    try:
        return open_store(location, create=create)
    except StoreNotFound as exc:
        say(f"error: {exc.code}: {exc}", err=True)
        raise typer.Exit(EXIT_NOT_FOUND) from None
    except StoreOpenRefused as exc:
        fail(STORE_REFUSED_EXIT, f"{label}: {exc}")
    except EngineUnavailable as exc:
        fail(2, f"{label}: {exc}")


def refuse_unusable_address(host: str, port: int, label: str) -> None:
    """Before anything starts, bind ``host:port`` as the Server will, and end the command if it cannot: exit 4
    (``port-in-use``) when another process listens there, exit 2 naming ``label`` (the option or variable that
    set the host) when the host is no address of this machine or names nothing.

    Otherwise uvicorn prints its own error after the start-up banner and exits 3, the code of "not found". Each
    address the host resolves to is tried as asyncio's server binds it (``SO_REUSEADDR``, IPv6 sockets
    IPv6-only), so a port in ``TIME_WAIT`` is not refused; a process that takes the port between this check and
    the Server's bind still fails in uvicorn.
    """
    import errno
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError, ValueError) as exc:
        unwrapped = host[1:-1] if host.startswith("[") and host.endswith("]") else ""
        hint = f"; write an IPv6 address without brackets ({unwrapped})" if unwrapped else ""
        why = getattr(exc, "strerror", None) or type(exc).__name__
        fail(2, f"{label}: {host!r} names no address ({why}){hint or _HOST_HINT}")
    for family, kind, proto, _, address in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                where = f"{url_host(str(address[0]))}:{port}"
                if exc.errno == errno.EADDRINUSE:
                    fail(4, f"port-in-use: {where} is taken by another process; stop it or pass another --port")
                if exc.errno == errno.EADDRNOTAVAIL:
                    named = host if host == address[0] else f"{host} ({address[0]})"
                    fail(2, f"{label}: {named} is not an address of this machine{_HOST_HINT}")
                fail(2, f"cannot listen on {where} ({exc.strerror or type(exc).__name__})")


_HOST_HINT = "; give one of this machine's addresses: 127.0.0.1 (the default) for it alone, 0.0.0.0 for every interface"
