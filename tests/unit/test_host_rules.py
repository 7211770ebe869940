"""The Host/Origin allow-list as a table: which header values name the Server, and which entries configure it."""

from __future__ import annotations

import pytest

from powercontext.server.host_guard import BadHostEntry, HostRules, parse_authority

LOOPBACK_8765 = ("127.0.0.1", 8765)


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1:8765", "localhost:8765", "LocalHost:8765", "[::1]:8765", "[0:0:0:0:0:0:0:1]:8765"],
)
def test_loopback_names_with_the_port_the_connection_arrived_on(host: str) -> None:
    assert HostRules().allows(parse_authority(host), "http", LOOPBACK_8765)


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:8765",  # a rebound name
        "localhost",  # port 80 by default: not the port the connection arrived on
        "localhost:8766",
        "127.0.0.1:8765@evil.example",
        "user@127.0.0.1:8765",
        "127.0.0.1:8765/path",
        "::1:8765",  # IPv6 without brackets
        "[::1",
        "localhost:0",
        "localhost:+8765",
        "localhost:８７６５",  # non-ASCII digits
        "",
        "0.0.0.0:8765",
    ],
)
def test_anything_else_is_not_the_server(host: str) -> None:
    assert not HostRules().allows(parse_authority(host), "http", LOOPBACK_8765)


def test_the_default_port_of_the_scheme_counts() -> None:
    assert HostRules().allows(parse_authority("localhost"), "http", ("127.0.0.1", 80))
    assert HostRules().allows(parse_authority("localhost"), "https", ("127.0.0.1", 443))
    assert not HostRules().allows(parse_authority("localhost"), "https", ("127.0.0.1", 80))


def test_the_bind_address_and_the_address_a_connection_arrived_on() -> None:
    bound = HostRules("192.0.2.7")
    assert bound.allows(parse_authority("192.0.2.7:8765"), "http", ("192.0.2.7", 8765))
    assert bound.allows(parse_authority("localhost:8765"), "http", ("192.0.2.7", 8765))
    wildcard = HostRules("0.0.0.0")
    assert wildcard.allows(parse_authority("192.0.2.9:8765"), "http", ("192.0.2.9", 8765))
    assert not wildcard.allows(parse_authority("192.0.2.9:8765"), "http", ("127.0.0.1", 8765))
    assert not wildcard.allows(parse_authority("0.0.0.0:8765"), "http", ("127.0.0.1", 8765))
    v6 = HostRules("::")
    assert v6.allows(parse_authority("[2001:db8::5]:8765"), "http", ("2001:db8::5", 8765))
    assert HostRules("::1").allows(parse_authority("[::1]:8765"), "http", ("::1", 8765))


def test_configured_names_with_and_without_a_port() -> None:
    rules = HostRules(extra=["context.example.test", "proxy.example.test:8443"])
    assert rules.allows(parse_authority("context.example.test"), "https", LOOPBACK_8765)
    assert rules.allows(parse_authority("Context.Example.Test:1234"), "http", LOOPBACK_8765)
    assert rules.allows(parse_authority("proxy.example.test:8443"), "https", LOOPBACK_8765)
    assert not rules.allows(parse_authority("proxy.example.test"), "https", LOOPBACK_8765)
    assert not rules.allows(parse_authority("sub.context.example.test"), "http", LOOPBACK_8765)


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://127.0.0.1:8765", True),
        ("http://localhost:8765", True),
        ("https://localhost:8765", True),
        ("http://localhost", False),
        ("http://evil.example:8765", False),
        ("null", False),
        ("file://", False),
        ("ftp://127.0.0.1:8765", False),
        ("http://127.0.0.1:8765/inspector", False),
        ("chrome-extension://abcdef", False),
    ],
)
def test_origins(origin: str, allowed: bool) -> None:
    assert HostRules().allows_origin(origin, LOOPBACK_8765) is allowed


def test_no_socket_means_any_port_for_the_servers_own_names() -> None:
    assert HostRules().allows(parse_authority("127.0.0.1"), "http", None)
    assert not HostRules().allows(parse_authority("evil.example"), "http", None)


@pytest.mark.parametrize("entry", ["*", "http://x.test", "x.test:99999", "a b", "x.test:", "[::1"])
def test_bad_entries_are_refused(entry: str) -> None:
    with pytest.raises(BadHostEntry):
        HostRules(extra=[entry])
