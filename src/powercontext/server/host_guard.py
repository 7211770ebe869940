"""Which ``Host`` and ``Origin`` a request may carry: the Server's defence against DNS rebinding.

A web page whose domain rebinds to 127.0.0.1 makes the browser send its requests to the Server with the
page's own name in ``Host`` (and, for a cross-site fetch, in ``Origin``). The Server answers only to names
it knows are its own:

* the loopback names ``localhost``, ``127.0.0.1`` and ``[::1]``, the bind address (unless it is a wildcard
  such as ``0.0.0.0``), and the address the connection actually arrived on, each with the port the
  connection arrived on (no port means the scheme's default);
* the names an operator lists in ``POWERCONTEXT_ALLOWED_HOSTS`` (``name`` for any port, ``name:port`` for
  one), for a Server behind a proxy or reached by a DNS name.

Any other ``Host`` answers ``421 misdirected-request``. A request whose ``Origin`` is not ``http`` or
``https`` on an allowed host answers ``403 origin-forbidden`` (every route but the health probes, which
hold no data). A browser page of the Server's own origin (the Inspector) passes both. Plain ASGI
middleware ahead of authentication and routing, so it guards every route alike: the API, the Inspector,
``/mcp`` and ``/metrics``.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

LOOPBACK_NAMES: Final = ("localhost", "127.0.0.1", "[::1]")
ALLOWED_HOSTS_VARIABLE: Final = "POWERCONTEXT_ALLOWED_HOSTS"
WILDCARD_BINDS: Final = frozenset({"", "0.0.0.0", "::", "[::]"})
HEALTH_PREFIX: Final = "/health/"
_DEFAULT_PORTS: Final = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_NAME: Final = re.compile(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*")

MISDIRECTED_MESSAGE: Final = (
    "this Server answers only to its loopback names, its bind address and the names listed in "
    f"{ALLOWED_HOSTS_VARIABLE}; if this host name is the Server's own, add it there"
)
ORIGIN_MESSAGE: Final = (
    "requests from a web page of another origin are refused; open the page from the Server's own address, or add "
    f"its host to {ALLOWED_HOSTS_VARIABLE}"
)


class BadHostEntry(ValueError):
    """An ``POWERCONTEXT_ALLOWED_HOSTS`` entry that is not ``name`` or ``name:port``."""


@dataclass(frozen=True, slots=True)
class Authority:
    """A host name (lower case; an IPv6 address in brackets, compressed) and its port, if one was written."""

    name: str
    port: int | None


def parse_authority(value: str) -> Authority | None:
    """``name``, ``name:port``, ``[v6]`` or ``[v6]:port``; ``None`` for anything else (user info, paths,
    an unbracketed IPv6 address, a port out of range)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        try:
            name = f"[{ipaddress.IPv6Address(value[1:end]).compressed}]"
        except ValueError:
            return None
        rest = value[end + 1 :]
    else:
        name, colon, port_text = value.partition(":")
        rest = colon + port_text
        if not _NAME.fullmatch(name):
            return None
    if not rest:
        return Authority(name, None)
    port_text = rest[1:]
    if not rest.startswith(":") or not port_text.isascii() or not port_text.isdigit() or len(port_text) > 5:
        return None
    port = int(port_text)
    return Authority(name, port) if 0 < port < 65536 else None


def _address_name(address: str) -> str:
    """A socket address as it is written in a ``Host`` header (IPv6 in brackets)."""
    if ":" not in address:
        return address.lower()
    try:
        return f"[{ipaddress.IPv6Address(address).compressed}]"
    except ValueError:
        return ""


class HostRules:
    """The allow-list: names bound to the port the connection arrived on, and configured extra names."""

    def __init__(self, bind_host: str = "127.0.0.1", extra: Iterable[str] = ()) -> None:
        """``bind_host`` is the address the Server listens on; ``extra`` the ``POWERCONTEXT_ALLOWED_HOSTS``
        entries. Raises ``BadHostEntry`` for an entry that is not ``name`` or ``name:port``."""
        own = set(LOOPBACK_NAMES)
        bind = bind_host.strip().lower()
        if bind not in WILDCARD_BINDS:
            parsed = parse_authority(bind if bind.startswith("[") or ":" not in bind else f"[{bind}]")
            if parsed is not None:
                own.add(parsed.name)
        self._own = frozenset(own)
        self._any_port: set[str] = set()
        self._exact: set[Authority] = set()
        for entry in extra:
            parsed = parse_authority(entry)
            if parsed is None:
                raise BadHostEntry(f"{ALLOWED_HOSTS_VARIABLE} takes host names, each optionally with ':port'")
            if parsed.port is None:
                self._any_port.add(parsed.name)
            else:
                self._exact.add(parsed)

    def allows(self, authority: Authority | None, scheme: str, arrived_on: Any) -> bool:
        """Whether a ``Host`` (or an ``Origin``'s authority, with that origin's scheme) names this Server.

        ``arrived_on`` is the ASGI ``server`` pair (local address, port), or ``None`` (no socket: any port)."""
        if authority is None:
            return False
        if authority.name in self._any_port:
            return True
        port = authority.port if authority.port is not None else _DEFAULT_PORTS.get(scheme)
        if Authority(authority.name, port) in self._exact:
            return True
        if not isinstance(arrived_on, tuple | list) or len(arrived_on) != 2 or not isinstance(arrived_on[1], int):
            return authority.name in self._own  # no TCP socket (a Unix socket, in-process): any port
        local_address, local_port = arrived_on
        if port != local_port:
            return False
        return authority.name in self._own or authority.name == _address_name(str(local_address))

    def allows_origin(self, origin: str, arrived_on: Any) -> bool:
        """Whether an ``Origin`` header is ``http(s)://`` an allowed host (``null`` and other schemes are not)."""
        scheme, sep, rest = origin.strip().lower().partition("://")
        if not sep or scheme not in ("http", "https") or "/" in rest:
            return False
        return self.allows(parse_authority(rest), scheme, arrived_on)


class HostOriginGuard:
    """ASGI middleware: ``421 misdirected-request`` for a foreign ``Host``, ``403 origin-forbidden`` for a
    foreign ``Origin``, before authentication, routing or reading any body."""

    def __init__(self, app: Any, *, rules: HostRules) -> None:
        self.app = app
        self.rules = rules

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        hosts: list[str] = []
        origins: list[str] = []
        for name, value in scope["headers"]:
            if name == b"host":
                hosts.append(value.decode("latin-1"))
            elif name == b"origin":
                origins.append(value.decode("latin-1"))
        arrived_on = scope.get("server")
        scheme = str(scope.get("scheme", "http"))
        # One Host, naming this Server (HTTP/1.1 requires exactly one; two could be read differently upstream).
        if len(hosts) != 1 or not self.rules.allows(parse_authority(hosts[0]), scheme, arrived_on):
            await _refuse(scope, send, 421, "misdirected-request", MISDIRECTED_MESSAGE)
            return
        checks_origin = bool(origins) and not scope["path"].startswith(HEALTH_PREFIX)
        if checks_origin and (len(origins) != 1 or not self.rules.allows_origin(origins[0], arrived_on)):
            await _refuse(scope, send, 403, "origin-forbidden", ORIGIN_MESSAGE)
            return
        await self.app(scope, receive, send)


async def _refuse(scope: dict[str, Any], send: Any, status: int, code: str, message: str) -> None:
    # The connection is closed: the body (if any) is never read, and a client that sent the request to the
    # wrong server should not reuse the connection.
    request_id = str(scope.get("state", {}).get("request_id", ""))
    body = json.dumps({"error": {"code": code, "message": message, "request_id": request_id}}).encode("utf-8")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
