"""Rerank configuration records on the wire, and their RFC 8785 digests.

``config_digest`` = ``sha256:`` over the RFC 8785 (JCS) canonical JSON of a versioned record of everything
that affects the invocation: policy, model, effective safe settings (under the allowlist's version), timeout,
request limit and Prompt identity. Credentials, URLs and Prompt text are not in the record, so they can
never be in the digest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final

import rfc8785

from powercontext.inference.generation_config import SAFE_SETTINGS_VERSION
from powercontext.prompts.definitions import ResolvedPrompt
from powercontext.recall.rerank_record import RerankConfigRecord

CONFIG_RECORD_VERSION: Final = "powercontext.rerank-config.v1"


def prompt_identity(prompt: ResolvedPrompt | None) -> dict[str, Any] | None:
    """The Receipt's ``prompt`` object: the ResolvedPrompt without its compiled text."""
    if prompt is None:
        return None
    address = prompt.artifact_address
    return {**prompt.identity(), "artifact_address": None if address is None else address.model_dump(mode="json")}


def config_digest(config: Mapping[str, Any]) -> str:
    """The digest of a wire config's record fields (the same function checks a Receipt and builds one)."""
    record = {
        "record_version": CONFIG_RECORD_VERSION,
        "settings_version": SAFE_SETTINGS_VERSION,
        "policy_id": config["policy_id"],
        "model": config["model"],
        "effective_settings": dict(config["effective_settings"]),
        "timeout_seconds": config["timeout_seconds"],
        "max_requests": config["max_requests"],
        "prompt": config["prompt"],
    }
    try:
        # The same few configs recur on every prepare, and RFC 8785 serialization is pure Python (~0.1 ms):
        # key a cache by plain JSON with sorted keys. Equal keys are equal records; records that only
        # canonicalize alike (1 and 1.0) merely get separate entries.
        key = json.dumps(record, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):  # not plain JSON: let the canonicalizer judge (and raise) as before
        return _digest_of(record)
    return _cached_digest(key, record)


def _digest_of(record: Mapping[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(rfc8785.dumps(record)).hexdigest()


_DIGESTS: dict[str, str] = {}
_MAX_CACHED = 256


def _cached_digest(key: str, record: Mapping[str, Any]) -> str:
    digest = _DIGESTS.get(key)
    if digest is None:
        digest = _digest_of(record)
        if len(_DIGESTS) >= _MAX_CACHED:  # a bound, not an LRU: configs change only with a restart
            _DIGESTS.clear()
        _DIGESTS[key] = digest
    return digest


def wire_config(record: RerankConfigRecord) -> dict[str, Any]:
    """A ``rerank_configs`` entry: ``config_id`` is its digest; model-backed is always non-deterministic."""
    config: dict[str, Any] = {
        "policy_id": record.policy_id,
        "model": record.model,
        "effective_settings": dict(sorted(record.effective_settings.items())),
        "timeout_seconds": float(record.timeout_seconds),
        "max_requests": record.max_requests,
        "prompt": prompt_identity(record.prompt),
        "non_deterministic": record.model_backed,
    }
    digest = config_digest(config)
    fields = ("policy_id", "model", "effective_settings", "timeout_seconds", "max_requests")
    return {
        "config_id": digest,
        **{f: config[f] for f in fields},
        "config_digest": digest,
        "prompt": config["prompt"],
        "non_deterministic": config["non_deterministic"],
    }
