"""Opt-in hook diagnostics: a *separate* prepare call with ``include_receipt: true``.

The automatic call never asks for a Receipt (strict hosts would reject the fifth key). When
``POWERCONTEXT_HOOK_DIAGNOSTICS=1``, the hook makes a second call after its output is written and
appends one JSON line to ``<state dir>/hook-diagnostics.jsonl`` with only ``receipt_id``,
``content_digest``, ``status``, ``content_bytes`` and omission counts by reason. Nothing of it reaches
the agent; no query, content, Scope or identity is written.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from powercontext.hosts.recall import PREPARE_PATH, HookSettings, RecallRequest
from powercontext.hosts.transport import TransportFailure, post_json

DIAGNOSTICS_FILE = "hook-diagnostics.jsonl"
STATE_FILE = "last-hook-outcome.json"


def receipt_summary(body: bytes) -> dict[str, Any] | None:
    """The content-free summary of a prepare answer that carries a Receipt; None if it has none."""
    try:
        doc = json.loads(body)
        receipt = doc["receipt"]
        omitted: Counter[str] = Counter()
        for group in receipt.get("omitted", []):
            omitted[str(group["reason"])] += int(group["count"])
        return {
            "receipt_id": str(receipt["receipt_id"]),
            "content_digest": receipt.get("content_digest"),
            "status": str(doc["status"]),
            "content_bytes": int(doc["content_bytes"]),
            "selected_count": len(receipt.get("selected", [])),
            "omitted": dict(sorted(omitted.items())),
        }
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def record_diagnostics(request: RecallRequest, settings: HookSettings, host: str, timeout_s: float) -> None:
    """Make the diagnostic call and append its summary (or a failure line) to the local file."""
    body = {
        "scope_id": request.scope_id,
        "query": request.query,
        "max_bytes": request.max_bytes,
        "include_receipt": True,
    }
    line: dict[str, Any] = {"time": round(time.time(), 3), "host": host}
    try:
        answer = post_json(settings.url, PREPARE_PATH, body, token=settings.token, timeout_s=timeout_s)
    except TransportFailure as exc:
        line.update(outcome="server_unavailable", reason=exc.kind)
    else:
        summary = receipt_summary(answer.body) if answer.status == 200 else None
        if summary is None:
            line.update(outcome="no_receipt", http_status=answer.status)
        else:
            line.update(outcome="receipt", **summary)
    append_line(settings.resolved_state_dir() / DIAGNOSTICS_FILE, line)


def append_line(path: Path, line: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(line, separators=(",", ":")) + "\n")


def write_state(settings: HookSettings, record: dict[str, Any]) -> None:
    """The last hook outcome, for ``powercontext hosts doctor`` (content-free; replaced atomically)."""
    directory = settings.resolved_state_dir()
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(record, separators=(",", ":")), encoding="utf-8")
    tmp.replace(directory / STATE_FILE)


def read_state(settings: HookSettings) -> dict[str, Any] | None:
    try:
        data = json.loads((settings.resolved_state_dir() / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
