"""The items of a ``PreparedContext``, each with its exact address, for frameworks that want them one by one.

A prepared context is one text an agent reads as it is: a trust preamble, then a JSON object between two
marker lines whose ``items`` each carry a citation, a kind, a truncation flag and the exact (possibly
truncated) stored text. The JSON is what the Server wrote, so every field is read back exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from powercontext.contract.prepare import PrepareContextRequest, PreparedContext

BEGIN_LINE = "BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1\n"
END_LINE = "\nEND_POWERCONTEXT_PREPARED_CONTEXT_V1"


class UnreadablePreparedContext(ValueError):
    """The content is not a ``powercontext.prepared-context.v1`` text (a Server of another version?)."""


@dataclass(frozen=True)
class PreparedItem:
    """One injected item. ``family`` is ``atomic-memory``, ``topic-memory``, ``experience``, ``profile`` or
    ``code``; a code item has ``code_evidence`` (path, lines, digests) instead of an artifact id and revision."""

    text: str
    kind: str
    family: str
    scope_id: str
    truncated: bool
    artifact_id: str | None = None
    revision: int | None = None
    observed: str | None = None
    code_evidence: dict[str, Any] | None = None

    @property
    def address(self) -> str:
        """``scope/family/artifact_id@revision`` for a historical item; ``scope/code/path:start-end`` for code."""
        if self.code_evidence is not None:
            code = self.code_evidence
            return f"{self.scope_id}/code/{code['path']}:{code['start_line']}-{code['end_line']}"
        return f"{self.scope_id}/{self.family}/{self.artifact_id}@{self.revision}"

    def metadata(self) -> dict[str, Any]:
        """Flat metadata for a framework's document or node: the address's parts, kind, truncation, date."""
        data: dict[str, Any] = {
            "powercontext_address": self.address,
            "scope_id": self.scope_id,
            "family": self.family,
            "kind": self.kind,
            "truncated": self.truncated,
            # The text is stored history, not instructions: the prepared context says so in its preamble, which
            # a framework that takes the items one by one does not see.
            "trust": "untrusted_history",
        }
        if self.code_evidence is not None:
            data["code_evidence"] = dict(self.code_evidence)
        else:
            data["artifact_id"] = self.artifact_id
            data["revision"] = self.revision
        if self.observed is not None:
            data["observed"] = self.observed
        return data


def prepared_items(prepared: PreparedContext) -> list[PreparedItem]:
    """The items of ``prepared`` in injection order; ``[]`` for an empty context."""
    if prepared.status == "empty" or not prepared.content:
        return []
    content = prepared.content
    begin, end = content.find(BEGIN_LINE), content.rfind(END_LINE)
    if begin < 0 or end < begin:
        raise UnreadablePreparedContext("no BEGIN/END marker lines in the prepared content")
    try:
        body = json.loads(content[begin + len(BEGIN_LINE) : end])
        return [_item(raw) for raw in body["items"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise UnreadablePreparedContext(f"the prepared items are not as v1 writes them ({exc})") from None


def _item(raw: dict[str, Any]) -> PreparedItem:
    citation = raw["citation"]
    common = {"text": raw["content"], "kind": raw["kind"], "truncated": bool(raw["truncated"])}
    if "code_evidence" in citation:
        code = citation["code_evidence"]
        return PreparedItem(family="code", scope_id=code["scope_id"], code_evidence=code, **common)
    artifact = citation["artifact"]
    return PreparedItem(
        family=artifact["family"],
        scope_id=citation["scope_id"],
        artifact_id=artifact["artifact_id"],
        revision=int(artifact["revision"]),
        observed=raw.get("observed"),
        **common,
    )


@dataclass(frozen=True)
class ContextCall:
    """Where and how an adapter prepares context: the Scope, the Server (``base_url`` and ``token`` default to
    ``POWERCONTEXT_URL`` / ``POWERCONTEXT_TOKEN``, as the SDK), the byte budget and whether code is added."""

    scope_id: str
    base_url: str | None = None
    token: str | None = None
    max_bytes: int = 8000
    include_code: bool = False
    timeout: float = 30.0

    def request(self, query: str) -> PrepareContextRequest:
        """The prepare request for ``query`` (cut to the longest query the Server takes)."""
        from powercontext.contract.prepare import MAX_QUERY_CHARS, PrepareContextRequest

        return PrepareContextRequest(
            scope_id=self.scope_id,
            query=query[:MAX_QUERY_CHARS],
            max_bytes=self.max_bytes,
            include_code=self.include_code,
        )

    def prepare(self, query: str) -> PreparedContext:
        """Prepare context for ``query``, blocking (a client of its own, closed after the call)."""
        from powercontext.client.sync import SyncPowerContextClient

        with SyncPowerContextClient(self.base_url, token=self.token, timeout=self.timeout) as client:
            return client.prepare_context(self.request(query))

    async def aprepare(self, query: str) -> PreparedContext:
        """Prepare context for ``query`` on the running event loop."""
        from powercontext.client import PowerContextClient

        async with PowerContextClient(self.base_url, token=self.token, timeout=self.timeout) as client:
            return await client.prepare_context(self.request(query))
