"""The SDK as a new user meets it (issue 41): it reads the CLI's environment, its hints name client methods, the
blocking client takes a blocking transport, a malformed URL is refused at once, every public method is
documented and the result models import from ``powercontext``. Calls go to real Servers on loopback."""

from __future__ import annotations

import hashlib
import inspect
import json
import threading
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest

import powercontext
from powercontext import (
    AtomicMemorySearchResult,
    BadServerUrl,
    Forbidden,
    NotFound,
    PowerContextClient,
    PowerContextError,
    Scope,
    SyncPowerContextClient,
)
from tests.conftest import LiveServer, live_server
from tests.hosts_e2e.support import hung_server
from tests.support import free_port

TOKEN = "newcomer-token-5Rz"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("newcomer-access")
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    principals = {"principals": [{"name": "me", "token_sha256": digest, "read": ["*"], "write": ["*"]}]}
    (base / "access.json").write_text(json.dumps(principals), encoding="utf-8")
    with live_server(base, {"POWERCONTEXT_ACCESS_FILE": str(base / "access.json")}) as live:
        yield live


def test_the_clients_read_the_url_and_token_from_the_environment(
    guarded: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERCONTEXT_URL", guarded.base_url)
    monkeypatch.delenv("POWERCONTEXT_TOKEN", raising=False)
    with SyncPowerContextClient() as anonymous, pytest.raises(Forbidden):
        anonymous.list_scopes()
    monkeypatch.setenv("POWERCONTEXT_TOKEN", TOKEN)
    scope_id = f"env-{uuid.uuid4().hex[:8]}"
    with SyncPowerContextClient() as client:
        assert client.base_url == guarded.base_url
        assert client.create_scope(scope_id, "From the environment").scope_id == scope_id
    with SyncPowerContextClient(token="wrong-token") as explicit, pytest.raises(Forbidden):
        explicit.list_scopes()  # an explicit token wins over the variable


def test_a_not_found_hint_names_the_client_method(server: LiveServer) -> None:
    with SyncPowerContextClient(server.base_url) as client, pytest.raises(NotFound) as caught:
        client.add_memory(f"missing-{uuid.uuid4().hex[:8]}", "A fact.", "fact")
    assert caught.value.code == "scope-not-found"
    assert "client.create_scope(scope_id, title)" in caught.value.message
    assert "/v1/" not in caught.value.message


def test_the_sync_client_takes_a_blocking_transport(server: LiveServer) -> None:
    scope_id = f"transport-{uuid.uuid4().hex[:8]}"
    with SyncPowerContextClient(server.base_url, transport=httpx.HTTPTransport()) as client:
        assert isinstance(client.create_scope(scope_id, "Blocking transport"), Scope)
        client.add_memory(scope_id, "Invoices are archived for ten years.", "decision")
        found = client.search_memory(scope_id, "invoices archived")
    assert isinstance(found, AtomicMemorySearchResult)
    assert [hit.text for hit in found.hits] == ["Invoices are archived for ten years."]
    with SyncPowerContextClient(server.base_url, transport=httpx.AsyncHTTPTransport()) as client:
        assert client.get_scope(scope_id).scope_id == scope_id  # an async transport still works


def test_a_blocking_transport_keeps_the_clients_deadline() -> None:
    """The client's timeout reaches a blocking transport (the CLI's too): a Server that accepts and never answers
    costs the deadline, not forever."""
    with hung_server(port := free_port()):
        outcome: list[BaseException] = []

        def call() -> None:
            with SyncPowerContextClient(f"http://127.0.0.1:{port}", transport=httpx.HTTPTransport(), timeout=0.5) as c:
                try:
                    c.list_scopes()
                except PowerContextError as exc:
                    outcome.append(exc)

        started = time.monotonic()
        thread = threading.Thread(target=call, daemon=True)
        thread.start()
        thread.join(timeout=10)
        assert not thread.is_alive(), "the call outlived its 0.5 s deadline by 10 s"
    assert time.monotonic() - started < 5
    assert len(outcome) == 1


@pytest.mark.parametrize(
    ("url", "says"),
    [("127.0.0.1:8765", "no scheme"), ("http://127.0.0.1:8765/v1", "without /v1"), ("file:///x", "http://")],
)
def test_a_malformed_url_is_refused_when_the_client_is_made(url: str, says: str) -> None:
    with pytest.raises(BadServerUrl, match=says):
        SyncPowerContextClient(url)
    with pytest.raises(ValueError, match=says):
        PowerContextClient(url)


def test_every_public_method_of_both_clients_has_a_docstring() -> None:
    for cls in (PowerContextClient, SyncPowerContextClient):
        undocumented = [
            name
            for name, member in inspect.getmembers(cls, callable)
            if not name.startswith("_") and not (inspect.getdoc(member) or "").strip()
        ]
        assert undocumented == [], cls.__name__


def test_the_result_models_are_exported() -> None:
    from powercontext.contract import memory

    for name in memory.__all__:
        assert hasattr(memory, name), name
    for name in ("AtomicMemory", "AtomicMemoryCreated", "AtomicMemoryList", "AtomicMemorySearchResult", "Scope"):
        assert name in powercontext.__all__
