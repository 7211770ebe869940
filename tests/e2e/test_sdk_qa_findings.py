"""The SDK findings of the QA pass, against real Servers on loopback: the blocking client inside a running event
loop and from several threads, a closed client's clear error, client-side input errors as ``InvalidRequest``, a
Profile given as a mapping, and ``get_scope``'s documented refusal."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import threading
import warnings
from collections.abc import Iterator

import httpx
import pydantic
import pytest

from powercontext import (
    ClientClosed,
    Forbidden,
    InvalidRequest,
    PowerContextClient,
    PowerContextError,
    SyncPowerContextClient,
)
from tests.conftest import LiveServer, live_server
from tests.support import unique, wait_until

READER = "qa-reader-token-7Qk"


def _runtime_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def test_the_sync_client_works_inside_a_running_event_loop(server: LiveServer) -> None:
    """What a notebook cell is: a running loop in the main thread calling the blocking client."""
    scope_id = unique("inloop")

    async def main() -> list[str]:
        with SyncPowerContextClient(server.base_url) as client:
            client.create_scope(scope_id, "Inside a loop")
            client.add_memory(scope_id, "Refunds go back to the original card.", "decision")
            return [s.scope_id for s in client.list_scopes()]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert scope_id in asyncio.run(main())
        gc.collect()
    assert _runtime_warnings(caught) == []


def test_one_sync_client_from_two_threads_at_once_leaves_no_thread_behind(server: LiveServer) -> None:
    scope_id = unique("threads")
    before = set(threading.enumerate())
    client = SyncPowerContextClient(server.base_url)
    client.create_scope(scope_id, "Two threads")
    start = threading.Barrier(2)
    failures: list[BaseException] = []

    def writer(n: int, in_loop: bool) -> None:
        def calls() -> None:
            start.wait(timeout=10)
            for i in range(8):
                client.add_memory(scope_id, f"Fact {n}-{i} about settlement.", "fact")
                client.get_scope(scope_id)

        async def in_a_loop() -> None:
            calls()

        try:
            asyncio.run(in_a_loop()) if in_loop else calls()
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(n, n == 0)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert failures == []
    assert len(client.list_memories(scope_id, limit=50).items) == 16
    client.close()
    assert wait_until(lambda: set(threading.enumerate()) <= before, timeout=5), threading.enumerate()


def test_a_closed_client_raises_client_closed_without_a_warning(server: LiveServer) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with SyncPowerContextClient(server.base_url) as client:
            client.list_scopes()
        client.close()  # a second close does nothing
        with pytest.raises(ClientClosed) as closed:
            client.list_scopes()

        async def after_aclose() -> None:
            async with PowerContextClient(server.base_url) as async_client:
                await async_client.list_scopes()
            with pytest.raises(ClientClosed):
                await async_client.list_scopes()

        asyncio.run(after_aclose())
        gc.collect()
    assert _runtime_warnings(caught) == []
    assert isinstance(closed.value, PowerContextError) and isinstance(closed.value, RuntimeError)
    assert closed.value.code == "client-closed" and "closed" in closed.value.message


def test_a_client_never_closed_ends_its_thread_when_collected(server: LiveServer) -> None:
    before = set(threading.enumerate())
    client = SyncPowerContextClient(server.base_url)
    client.list_scopes()
    del client
    gc.collect()
    assert wait_until(lambda: set(threading.enumerate()) <= before, timeout=5), threading.enumerate()


def test_client_side_input_errors_are_invalid_request_in_the_servers_words(server: LiveServer) -> None:
    scope_id = unique("input")
    with SyncPowerContextClient(server.base_url) as client:
        client.create_scope(scope_id, "Input errors")
        with pytest.raises(InvalidRequest) as bad_kind:
            client.add_memory(scope_id, "x", "bogus")  # type: ignore[arg-type]
        with pytest.raises(InvalidRequest) as empty:
            client.add_memory(scope_id, "", "fact")
        with pytest.raises(InvalidRequest) as bad_topic:
            client.create_topic(scope_id, "", "body")
    for caught, field in ((bad_kind, "kind"), (empty, "text"), (bad_topic, "title")):
        assert isinstance(caught.value, PowerContextError)
        assert (caught.value.status, caught.value.code) == (422, "invalid-request")
        assert caught.value.message.startswith(f"{field}: ")
        assert isinstance(caught.value.__cause__, pydantic.ValidationError)
    # The same wording the Server answers for the same body.
    path = f"{server.base_url}/v1/scopes/{scope_id}/atomic-memory"
    for body, caught in (({"text": "x", "kind": "bogus"}, bad_kind), ({"text": "", "kind": "fact"}, empty)):
        answer = httpx.post(path, json=body, timeout=10).json()["error"]
        assert caught.value.message == answer["message"]


def test_set_profile_takes_a_mapping_and_refuses_what_is_not_pairs(server: LiveServer) -> None:
    scope_id = unique("profile")
    with SyncPowerContextClient(server.base_url) as client:
        client.create_scope(scope_id, "Profile")
        first = client.set_profile(scope_id, {"ab": "value", "a": "b"}, expected_revision=0)
        assert [(e.key, e.value) for e in first.entries] == [("ab", "value"), ("a", "b")]
        second = client.set_profile(scope_id, [("tz", "UTC")], expected_revision=1)
        assert [(e.key, e.value) for e in second.entries] == [("tz", "UTC")]
        for bad in (["ab"], [("a", "b", "c")], "ab", 42, [{"key": "a"}]):
            with pytest.raises(InvalidRequest) as refused:
                client.set_profile(scope_id, bad, expected_revision=2)  # type: ignore[arg-type]
            assert refused.value.message.startswith("entries"), bad
        with pytest.raises(InvalidRequest) as not_text:
            client.set_profile(scope_id, {"a": 1}, expected_revision=2)  # type: ignore[dict-item]
        assert not_text.value.message.startswith("entries.0.value: ")
        assert [(e.key, e.value) for e in client.get_profile(scope_id).entries] == [("tz", "UTC")]


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("qa-access")
    digest = hashlib.sha256(READER.encode()).hexdigest()
    principals = {"principals": [{"name": "reader", "token_sha256": digest, "read": ["open:*"], "write": []}]}
    (base / "access.json").write_text(json.dumps(principals), encoding="utf-8")
    with live_server(base, {"POWERCONTEXT_ACCESS_FILE": str(base / "access.json")}) as live:
        yield live


def test_get_scope_on_an_unreadable_scope_raises_forbidden_as_documented(guarded: LiveServer) -> None:
    with SyncPowerContextClient(guarded.base_url, token=READER) as client, pytest.raises(Forbidden) as refused:
        client.get_scope("closed:ledger")
    assert (refused.value.status, refused.value.code) == (403, "scope-forbidden")
    for method in (PowerContextClient.get_scope, SyncPowerContextClient.get_scope):
        doc = method.__doc__ or ""
        assert "``Forbidden`` ``scope-forbidden``" in doc and "may not be read" not in doc
