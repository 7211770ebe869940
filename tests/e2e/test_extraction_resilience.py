"""Extraction survives what Servers go through: a Server killed mid-extraction, and two Servers on one store.

Killed: the Source it was extracting stays pending and the next Server extracts it once the lease expires. Two
Servers on one seekdb database (the multi-process situation of an OceanBase deployment): every Source is
extracted exactly once, whichever Server claims it. seekdb_server_cases.py runs both cases against a seekdb
server (``oceanbase://``) as well.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.chat_fixture import start_chat_server
from tests.conftest import live_server
from tests.seekdb_support import new_engine_dir, require_seekdb
from tests.support import TLS, wait_until


def _capture(base_url: str, scope_id: str, content: str) -> str:
    r = httpx.post(
        f"{base_url}/v1/scopes/{scope_id}/sources", json={"kind": "prompt", "content": content}, timeout=30, verify=TLS
    )
    assert r.status_code == 201, r.text
    return str(r.json()["source_id"])


def _extraction(base_url: str, scope_id: str, source_id: str) -> dict[str, Any]:
    r = httpx.get(f"{base_url}/v1/scopes/{scope_id}/sources/{source_id}", timeout=30, verify=TLS)
    return dict(r.json()["extraction"])


def _scope(base_url: str, scope_id: str) -> None:
    r = httpx.post(f"{base_url}/v1/scopes", json={"scope_id": scope_id, "title": "t"}, timeout=30, verify=TLS)
    assert r.status_code == 201, r.text


def killed_mid_extraction_leaves_the_source_to_the_next_server(base: Path, store: str | None) -> None:
    """A Server killed while the model answers leaves the Source pending under its lease; the next Server on the
    same store claims it once that lease expired and extracts it, once. (Shared with seekdb_server_cases.py.)"""
    with start_chat_server() as chat:
        chat.control(default={"mode": "stall", "delay_s": 60, "then": {"mode": "answer", "content": "{}"}})
        settings = {
            "POWERCONTEXT_GENERATION": "openai-compatible",
            "POWERCONTEXT_GENERATION_BASE_URL": chat.base_url,
            "POWERCONTEXT_GENERATION_MODEL": "extract-model",
            "POWERCONTEXT_GENERATION_TIMEOUT": "60",
            "POWERCONTEXT_EXTRACTION_LEASE_S": "2",
            "POWERCONTEXT_EXTRACTION_REVIEW": "none",
        }
        with live_server(base, settings, log_name="first.log", store=store) as first:
            _scope(first.base_url, "killed")
            source_id = _capture(first.base_url, "killed", "the build cache lives in /var/cache/ci")
            assert wait_until(lambda: chat.requests() >= 1, timeout=20), "the extraction never called the model"
            first.process.kill()  # mid-call: nothing was applied, the lease stays on the row
            first.process.wait(timeout=10)
        answer = '{"operations": [{"op": "create", "text": "The build cache lives in /var/cache/ci", "kind": "fact"}]}'
        chat.control(default={"mode": "answer", "content": answer})
        with live_server(base, settings, log_name="second.log", store=store) as second:
            assert wait_until(
                lambda: _extraction(second.base_url, "killed", source_id)["status"] == "done", timeout=30
            ), _extraction(second.base_url, "killed", source_id)
            done = _extraction(second.base_url, "killed", source_id)
            assert done["attempts"] == 2 and len(done["writes"]) == 1, done
            items = httpx.get(f"{second.base_url}/v1/scopes/killed/atomic-memory", timeout=30, verify=TLS).json()
            assert [m["text"] for m in items["items"]] == ["The build cache lives in /var/cache/ci"]
            assert chat.requests() == 2  # the killed call and the one that extracted it: nothing twice


def two_servers_extract_each_source_once(first_url: str, second_url: str, scope_id: str) -> None:
    """Sources captured through both Servers, each extracted exactly once whichever Server claims it, every result
    readable through the other. (Shared with seekdb_server_cases.py.)"""
    _scope(first_url, scope_id)
    servers = (first_url, second_url)
    sources = [_capture(servers[i % 2], scope_id, f"remember: fact number {i} holds") for i in range(12)]
    for i, source_id in enumerate(sources):
        base_url = servers[(i + 1) % 2]  # read through the other Server
        assert wait_until(lambda s=source_id, b=base_url: _extraction(b, scope_id, s)["status"] == "done", 30)
        assert len(_extraction(base_url, scope_id, source_id)["writes"]) == 1
    listed = httpx.get(f"{first_url}/v1/scopes/{scope_id}/atomic-memory?limit=100", timeout=30, verify=TLS)
    texts = sorted(m["text"] for m in listed.json()["items"])
    assert texts == sorted(f"fact number {i} holds" for i in range(12))


def test_a_server_killed_mid_extraction_leaves_the_source_to_the_next_one(tmp_path: Path) -> None:
    killed_mid_extraction_leaves_the_source_to_the_next_server(tmp_path, None)


def test_two_servers_on_one_seekdb_store_extract_each_source_once(tmp_path: Path) -> None:
    require_seekdb()
    url = f"seekdb://{new_engine_dir(tmp_path)}"
    with (
        live_server(tmp_path, store=url, log_name="a.log") as first,
        live_server(tmp_path, store=url, log_name="b.log") as second,
    ):
        two_servers_extract_each_source_once(first.base_url, second.base_url, "shared")
