"""One bounded HTTP POST with the standard library (fast to import, every limit explicit).

* a total deadline: the request runs in a daemon thread that the caller abandons at the deadline, and
  every socket operation also times out at the time that remains;
* no redirects (a 3xx is an answer, and the recall layer rejects it);
* the body is read up to ``max_body`` bytes plus one, so an oversized answer is detected without
  buffering it.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

MAX_RESPONSE_BYTES = 1024 * 1024


class TransportFailure(Exception):
    """No usable answer: ``kind`` is ``unavailable``, ``timeout``, ``too_large`` or ``bad_url``."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    content_type: str
    body: bytes


def _connection(url: str, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TransportFailure("bad_url")
    base_path = parts.path.rstrip("/")
    if parts.scheme == "https":
        context = ssl.create_default_context()
        return http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout, context=context), base_path
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout), base_path


def _post(url: str, path: str, payload: bytes, headers: dict[str, str], deadline: float, max_body: int) -> HttpAnswer:
    def remaining() -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TransportFailure("timeout")
        return left

    conn, base_path = _connection(url, remaining())
    try:
        conn.request("POST", base_path + path, body=payload, headers=headers)
        if conn.sock is not None:
            conn.sock.settimeout(remaining())
        response = conn.getresponse()
        chunks: list[bytes] = []
        size = 0
        while size <= max_body:
            if conn.sock is not None:
                conn.sock.settimeout(remaining())
            chunk = response.read1(min(65536, max_body + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_body:
            raise TransportFailure("too_large")
        remaining()
        return HttpAnswer(response.status, response.getheader("content-type", ""), b"".join(chunks))
    except TimeoutError:
        raise TransportFailure("timeout") from None
    except (OSError, http.client.HTTPException):
        if time.monotonic() >= deadline:
            raise TransportFailure("timeout") from None
        raise TransportFailure("unavailable") from None
    finally:
        conn.close()


def post_json(
    url: str,
    path: str,
    body: dict[str, Any],
    *,
    token: str | None,
    timeout_s: float,
    max_body: int = MAX_RESPONSE_BYTES,
) -> HttpAnswer:
    """POST ``body`` as JSON to ``url + path``; the whole exchange ends within ``timeout_s`` seconds."""
    deadline = time.monotonic() + timeout_s
    headers = {"Content-Type": "application/json", "Accept": "application/json", "Connection": "close"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
    outcome: list[HttpAnswer | TransportFailure] = []

    def run() -> None:
        try:
            outcome.append(_post(url, path, payload, headers, deadline, max_body))
        except TransportFailure as exc:
            outcome.append(exc)
        except Exception:  # any other failure is still "no answer"
            outcome.append(TransportFailure("unavailable"))

    worker = threading.Thread(target=run, name="powercontext-hook-http", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    if worker.is_alive() or not outcome:
        raise TransportFailure("timeout")
    result = outcome[0]
    if isinstance(result, TransportFailure):
        raise result
    return result
