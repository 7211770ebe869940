"""Helpers shared by the test suite: HTTP helpers, PreparedContext parsing, digests.

Nothing here re-implements the code under test: expectations are computed from first principles
(hashlib, unicodedata, json.JSONDecoder spans) rather than by calling the runtime's own helpers.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import ssl
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx

from powercontext.assembly.render import BEGIN_MARKER, END_MARKER

REQUEST_ID_HEADER = "X-PowerContext-Request-ID"

# One TLS context for every httpx client the tests open (``verify=TLS``): httpx otherwise builds a context and
# loads the whole CA bundle into it for each client, ~64 ms of CPU, and a readiness poll or a one-off
# ``httpx.get`` is a new client each time. The tests speak plain HTTP to loopback; no certificate is checked.
TLS = ssl.create_default_context()
FOUR_KEYS = {"schema", "status", "content", "content_bytes"}


class ChildProcess(Protocol):
    """What ``stop_process`` needs: a ``subprocess.Popen`` or a forked process (``tests/forked.py``)."""

    def poll(self) -> int | None: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...
    def wait(self, timeout: float | None = None) -> int: ...


def stop_process(process: ChildProcess, grace_s: float = 15.0) -> None:
    """Terminate a child process, and kill it if it has not exited after ``grace_s``."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=grace_s)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sha256_of(data: str | bytes) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def unique(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


@dataclass(frozen=True)
class Fragment:
    raw: str  # the exact JSON text of one item, as it appears in content
    item: dict[str, Any]

    @property
    def size(self) -> int:
        return len(self.raw.encode("utf-8"))

    @property
    def address(self) -> dict[str, Any]:
        return self.item["citation"]


def parse_fragments(content: str) -> list[Fragment]:
    """The items between the BEGIN/END markers, each with its exact source span.

    The spans come from ``json.JSONDecoder.raw_decode`` walking the array, so the fragment sizes are
    measured on the returned text itself, not re-serialized.
    """
    assert content.count(BEGIN_MARKER) == 1, "exactly one BEGIN marker"
    assert content.endswith(END_MARKER), "content ends with the END marker"
    start = content.index(BEGIN_MARKER) + len(BEGIN_MARKER)
    payload = content[start : len(content) - len(END_MARKER)]
    doc = json.loads(payload)
    assert set(doc) == {"trust", "items"}
    assert doc["trust"] == "untrusted_history"
    decoder = json.JSONDecoder()
    pos = payload.index("[", payload.index('"items"')) + 1
    fragments: list[Fragment] = []
    while payload[pos] != "]":
        obj, end = decoder.raw_decode(payload, pos)
        fragments.append(Fragment(payload[pos:end], obj))
        pos = end
        if payload[pos] == ",":
            pos += 1
    assert payload[pos:] == "]}"
    assert [f.item for f in fragments] == doc["items"]
    return fragments


def strict_json(raw: bytes) -> dict[str, Any]:
    """Parse JSON, failing on duplicate keys (a duplicate "receipt" would otherwise hide)."""

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        assert len(keys) == len(set(keys)), f"duplicate keys {keys}"
        return dict(pairs)

    return json.loads(raw, object_pairs_hook=hook)


def receipt_bytes(raw_body: bytes) -> bytes:
    """The exact bytes of the ``receipt`` value inside a prepare response body.

    Content is a JSON string, so an unescaped ``,"receipt":`` can only be the top-level key.
    """
    marker = b',"receipt":'
    assert raw_body.count(marker) == 1
    start = raw_body.index(marker) + len(marker)
    assert raw_body.endswith(b"}")
    return raw_body[start:-1]


class Api:
    """A small synchronous HTTP helper over httpx, talking to a live server."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.http = httpx.Client(base_url=base_url, timeout=60.0, verify=TLS)

    def close(self) -> None:
        self.http.close()

    def get(self, path: str) -> httpx.Response:
        return self.http.get(path)

    def post(self, path: str, body: Any) -> httpx.Response:
        return self.http.post(path, json=body)

    def put(self, path: str, body: Any) -> httpx.Response:
        return self.http.put(path, json=body)

    def new_scope(self, references: tuple[str, ...] | list[str] = (), prefix: str = "scope") -> str:
        scope_id = unique(prefix)
        r = self.http.post(
            "/v1/scopes", json={"scope_id": scope_id, "title": "test", "context_references": list(references)}
        )
        assert r.status_code == 201, r.text
        return scope_id

    def add(self, scope_id: str, text: str, kind: str = "note", **extra: Any) -> dict[str, Any]:
        r = self.http.post(f"/v1/scopes/{scope_id}/atomic-memory", json={"text": text, "kind": kind, **extra})
        assert r.status_code == 201, r.text
        return r.json()

    def search(self, scope_id: str, query: str, **extra: Any) -> httpx.Response:
        return self.http.post(f"/v1/scopes/{scope_id}/atomic-memory/search", json={"query": query, **extra})

    def hit_ids(self, scope_id: str, query: str) -> list[str]:
        r = self.search(scope_id, query, limit=50)
        assert r.status_code == 200, r.text
        return [h["artifact_address"]["artifact"]["artifact_id"] for h in r.json()["hits"]]

    def prepare(self, scope_id: str, query: str, **extra: Any) -> httpx.Response:
        return self.http.post("/v1/context/prepare", json={"scope_id": scope_id, "query": query, **extra})

    def lifecycle(self, scope_id: str, artifact_id: str, action: str, **extra: Any) -> httpx.Response:
        return self.http.post(
            f"/v1/scopes/{scope_id}/atomic-memory/{artifact_id}/lifecycle", json={"action": action, **extra}
        )

    def head(self, scope_id: str, artifact_id: str) -> httpx.Response:
        return self.http.get(f"/v1/scopes/{scope_id}/artifacts/atomic-memory/{artifact_id}")

    def revision(self, scope_id: str, artifact_id: str, revision: int) -> httpx.Response:
        return self.http.get(f"/v1/scopes/{scope_id}/artifacts/atomic-memory/{artifact_id}/revisions/{revision}")

    def read_address(self, address: dict[str, Any]) -> dict[str, Any]:
        ref = address["artifact"]
        r = self.revision(address["scope_id"], ref["artifact_id"], ref["revision"])
        assert r.status_code == 200, r.text
        return r.json()


def error_code(response: httpx.Response) -> str:
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "request_id"}
    assert body["error"]["request_id"] == response.headers[REQUEST_ID_HEADER]
    return str(body["error"]["code"])


def artifact_id(memory: dict[str, Any]) -> str:
    return str(memory["artifact_address"]["artifact"]["artifact_id"])


def scope_with_history(
    api: Api, filler: list[str], filler_observed: str, writes: list[tuple[str, str, str]]
) -> tuple[str, list[str]]:
    """A new Scope holding ``filler`` facts observed at ``filler_observed``, then each ``(text, kind, observed_at)``
    of ``writes`` in that order; the Scope and the writes' artifact ids."""
    scope = api.new_scope()
    for text in filler:
        api.add(scope, text, "fact", observed_at=filler_observed)
    return scope, [artifact_id(api.add(scope, text, kind, observed_at=at)) for text, kind, at in writes]


def count_artifacts(db_path: Path, scope_id: str) -> int:
    """Rows in the ``artifacts`` table for one Scope, read straight from the SQLite file."""
    from pysqlite3 import dbapi2

    conn = dbapi2.connect(str(db_path))
    try:
        return int(conn.execute("SELECT COUNT(*) FROM artifacts WHERE scope_id = ?", (scope_id,)).fetchone()[0])
    finally:
        conn.close()


def wait_until(predicate: Any, timeout: float = 10.0, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


def doc_image(name: str) -> str:
    """Where a browser test saves its screenshot ``name``.

    docs/img (the images the docs show) only when ``UPDATE_DOC_IMAGES=1``; otherwise a temporary folder, so
    that running the tests leaves the working tree as it was.
    """
    folder = Path(__file__).resolve().parent.parent / "docs" / "img"
    if os.environ.get("UPDATE_DOC_IMAGES") != "1":
        folder = Path(tempfile.gettempdir()) / "powercontext-screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / name)


def code_vectors(api: Api) -> dict[str, Any] | None:
    """The Server's background code-vector fill as ``/health/ready`` reports it (None without a provider)."""
    detail: dict[str, Any] | None = api.http.get("/health/ready").json().get("code-embeddings")
    return detail


def code_vectors_filled(api: Api) -> bool:
    """Whether the Server's background fill has embedded all code it was given."""
    detail = code_vectors(api)
    return detail is None or detail["scopes_waiting"] == 0
