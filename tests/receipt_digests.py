"""Digests as docs/receipts.md defines them, computed here from first principles (rfc8785 + hashlib)."""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785


def jcs_digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(rfc8785.dumps(value)).hexdigest()


def expected_config_digest(config: dict[str, Any]) -> str:
    """The documented versioned record of a ``rerank_configs`` entry, digested."""
    record = {
        "record_version": "powercontext.rerank-config.v1",
        "settings_version": "powercontext.inference-settings.v1",
        **{k: config[k] for k in ("policy_id", "model", "effective_settings", "timeout_seconds", "max_requests")},
        "prompt": config["prompt"],
    }
    return jcs_digest(record)
