"""DNS rebinding: the Server answers only to its own host names, and refuses requests from foreign web pages.

Against real Server processes on loopback (the default, single-user configuration: no access file), with the
requests a page whose domain rebinds to 127.0.0.1 would make: its own name in ``Host`` and ``Origin``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests import forked
from tests.conftest import REPO_ROOT, LiveServer, live_server
from tests.support import REQUEST_ID_HEADER, free_port, stop_process, wait_until

EVIL = "evil.example"
MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("host-origin")) as live:
        with httpx.Client(base_url=live.base_url, timeout=30) as http:
            assert http.post("/v1/scopes", json={"scope_id": "s:1", "title": "one"}).status_code == 201
        yield live


def port_of(live: LiveServer) -> int:
    port = urlsplit(live.base_url).port
    assert port is not None
    return port


def every_kind_of_route(http: httpx.Client, headers: dict[str, str], scope: str = "s:1") -> dict[str, httpx.Response]:
    """One request to each kind of route: REST read and write, Inspector page and asset, MCP, metrics."""
    planted = {"text": "planted by a web page", "kind": "fact"}
    return {
        "GET /v1/scopes": http.get("/v1/scopes", headers=headers),
        "POST atomic-memory": http.post(f"/v1/scopes/{scope}/atomic-memory", json=planted, headers=headers),
        "GET /inspector": http.get("/inspector", headers=headers),
        "GET /inspector/inspector.js": http.get("/inspector/inspector.js", headers=headers),
        "POST /mcp": http.post("/mcp", json=MCP_INITIALIZE, headers={**MCP_HEADERS, **headers}),
        "GET /metrics": http.get("/metrics", headers=headers),
    }


def assert_refused(answers: dict[str, httpx.Response], status: int, code: str) -> None:
    for route, r in answers.items():
        assert r.status_code == status, (route, r.status_code, r.text)
        body: dict[str, Any] = r.json()
        assert set(body) == {"error"} and body["error"]["code"] == code, (route, body)
        assert body["error"]["request_id"] == r.headers[REQUEST_ID_HEADER]
        assert EVIL not in body["error"]["message"]  # the header is never echoed


def no_planted_memory(http: httpx.Client) -> None:
    r = http.post("/v1/scopes/s:1/atomic-memory/search", json={"query": "planted"})
    assert r.status_code == 200, r.text
    assert r.json()["hits"] == []


def test_a_rebound_host_name_is_misdirected_on_every_route(local: LiveServer) -> None:
    port = port_of(local)
    with httpx.Client(base_url=local.base_url, timeout=30) as http:
        rebound = {"Host": f"{EVIL}:{port}", "Origin": f"http://{EVIL}:{port}"}
        assert_refused(every_kind_of_route(http, rebound), 421, "misdirected-request")
        assert_refused(every_kind_of_route(http, {"Host": f"{EVIL}:{port}"}), 421, "misdirected-request")
        no_planted_memory(http)


def test_a_foreign_origin_is_forbidden_on_every_route_but_the_probes(local: LiveServer) -> None:
    port = port_of(local)
    with httpx.Client(base_url=local.base_url, timeout=30) as http:
        for origin in (f"http://{EVIL}:{port}", "null", f"http://localhost:{port + 1}", f"ftp://127.0.0.1:{port}"):
            assert_refused(every_kind_of_route(http, {"Origin": origin}), 403, "origin-forbidden")
            assert http.get("/health/live", headers={"Origin": origin}).status_code == 200
        no_planted_memory(http)


def test_loopback_names_with_the_servers_port_are_served(local: LiveServer) -> None:
    port = port_of(local)
    with httpx.Client(base_url=local.base_url, timeout=30) as http:
        assert http.post("/v1/scopes", json={"scope_id": "s:same-origin", "title": "ok"}).status_code == 201
        for name in ("127.0.0.1", "localhost", "LOCALHOST"):
            same_origin = {"Host": f"{name}:{port}", "Origin": f"http://{name}:{port}"}
            answers = every_kind_of_route(http, same_origin, "s:same-origin")
            assert answers["POST atomic-memory"].status_code == 201, answers["POST atomic-memory"].text
            for route, r in answers.items():
                assert r.is_success, (route, r.status_code, r.text)
        # The right name on another port is another service, or a page of one.
        for host in (f"127.0.0.1:{port + 1}", "localhost", f"0.0.0.0:{port}", f"127.0.0.1:{port}@{EVIL}"):
            r = http.get("/v1/scopes", headers={"Host": host})
            assert (r.status_code, r.json()["error"]["code"]) == (421, "misdirected-request"), host
        # The probes need the Host rule too, but never the Origin rule.
        assert http.get("/health/ready", headers={"Host": f"{EVIL}:{port}"}).status_code == 421


def test_configured_extra_host_names_are_served(tmp_path: Path) -> None:
    settings = {"POWERCONTEXT_ALLOWED_HOSTS": "context.example.test, proxy.example.test:8443"}
    with live_server(tmp_path, settings) as live, httpx.Client(base_url=live.base_url, timeout=30) as http:
        assert http.post("/v1/scopes", json={"scope_id": "s:proxy", "title": "p"}).status_code == 201
        served = [
            {"Host": "context.example.test"},
            {"Host": "context.example.test:9999", "Origin": "https://context.example.test"},  # any port
            {"Host": "proxy.example.test:8443", "Origin": "https://proxy.example.test:8443"},
        ]
        for headers in served:
            r = http.post(
                "/v1/scopes/s:proxy/atomic-memory", json={"text": "via proxy", "kind": "fact"}, headers=headers
            )
            assert r.status_code == 201, (headers, r.text)
            assert http.get("/inspector", headers=headers).status_code == 200
        for headers in ({"Host": "proxy.example.test:8444"}, {"Host": "proxy.example.test"}, {"Host": EVIL}):
            assert http.get("/v1/scopes", headers=headers).status_code == 421, headers
        r = http.get("/v1/scopes", headers={"Host": "context.example.test", "Origin": "https://proxy.example.test"})
        assert r.status_code == 403  # the entry with a port allows only that port, for Origin too
        assert http.get("/v1/scopes").status_code == 200  # loopback still works


@pytest.mark.parametrize("value", ["*", "http://context.example.test"])
def test_a_bad_allowed_hosts_setting_stops_the_server_with_one_line(tmp_path: Path, value: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "POWERCONTEXT_ALLOWED_HOSTS": value}
    result = forked.run(
        [sys.executable, "-m", "powercontext", "server", "run", "--db", str(tmp_path / "x.db")],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=60,
    )
    assert result.returncode == 2
    assert "error: POWERCONTEXT_ALLOWED_HOSTS" in result.stderr
    assert "Traceback" not in result.stderr


def non_loopback_ipv4() -> str | None:
    """An address of this machine other than loopback (no packet is sent), or None without one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: only selects the outgoing interface
        except OSError:
            return None
        address = str(s.getsockname()[0])
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def test_a_wildcard_bind_answers_to_loopback_and_the_address_a_connection_arrived_on(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    args = [sys.executable, "-m", "powercontext", "server", "run", "--host", "0.0.0.0", "--port", str(port)]
    process = subprocess.Popen(
        [*args, "--db", str(tmp_path / "x.db")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO_ROOT,
        env=env,
    )
    try:
        local_url = f"http://127.0.0.1:{port}"

        def ready() -> bool:
            try:
                return httpx.get(local_url + "/health/ready", timeout=1).status_code == 200
            except httpx.TransportError:
                return process.poll() is not None

        assert wait_until(ready, timeout=30, interval=0.05) and process.poll() is None
        assert httpx.get(local_url + "/v1/scopes", timeout=10).status_code == 200
        wildcard = httpx.get(local_url + "/v1/scopes", headers={"Host": f"0.0.0.0:{port}"}, timeout=10)
        assert wildcard.status_code == 421  # the wildcard is not a name of the Server
        address = non_loopback_ipv4()
        if address is not None:
            lan_url = f"http://{address}:{port}"
            assert httpx.get(lan_url + "/v1/scopes", timeout=10).status_code == 200
            # That address names the Server only on connections that arrived on it.
            elsewhere = httpx.get(local_url + "/v1/scopes", headers={"Host": f"{address}:{port}"}, timeout=10)
            assert elsewhere.status_code == 421
            rebound = httpx.get(lan_url + "/v1/scopes", headers={"Host": f"{EVIL}:{port}"}, timeout=10)
            assert rebound.status_code == 421
    finally:
        stop_process(process)
