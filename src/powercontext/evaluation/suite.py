"""Evaluation suites: ``memories.jsonl`` + ``queries.jsonl`` (format: docs/evaluation.md).

A suite is read whole and checked before anything is ingested, so a broken line is reported with its
file and line number instead of surfacing as a half-finished run.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from powercontext.contract.common import MemoryKind
from powercontext.contract.memory import MAX_BODY_BYTES, AtomicMemoryCreate
from powercontext.contract.messages import describe_error, readable_errors
from powercontext.contract.prepare import MAX_QUERY_CHARS, PrepareContextRequest
from powercontext.contract.scopes import ScopeCreate

MEMORY_KINDS = frozenset(get_args(MemoryKind))
ABSTAIN = "abstain"


class SuiteError(ValueError):
    """A suite a person must fix; the message names the file, the line and the field."""


@dataclass(frozen=True, slots=True)
class SuiteMemory:
    id: str
    scope_id: str
    kind: str
    created: str
    text: str


@dataclass(frozen=True, slots=True)
class SuiteQuery:
    id: str
    scope_id: str
    query: str
    category: str
    expected: tuple[str, ...]
    outdated: tuple[str, ...]


@dataclass(frozen=True)
class Suite:
    name: str
    digest: str  # sha256 over both files' bytes: two runs of the same digest read the same suite
    memories: tuple[SuiteMemory, ...]
    queries: tuple[SuiteQuery, ...]

    @property
    def scope_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.scope_id for m in self.memories))

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(sorted({q.category for q in self.queries}))

    def memories_in_ingest_order(self, scope_id: str) -> list[SuiteMemory]:
        """Oldest first (``created``, then file order), so store order follows the suite's history."""
        indexed = [(m.created, i, m) for i, m in enumerate(self.memories) if m.scope_id == scope_id]
        return [m for _, _, m in sorted(indexed, key=lambda t: (t[0], t[1]))]


def _lines(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each non-blank line's place (``file:line``, for messages) and its JSON object."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SuiteError(f"{path.name}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(value, dict):
            raise SuiteError(f"{path.name}:{number}: expected a JSON object")
        yield f"{path.name}:{number}", value


def _text(where: str, value: dict[str, Any], key: str) -> str:
    field = value.get(key)
    if not isinstance(field, str) or not field.strip():
        raise SuiteError(f"{where}: '{key}' must be a non-empty string")
    return field


def _ids(where: str, value: dict[str, Any], key: str) -> tuple[str, ...]:
    field = value.get(key, [])
    if not isinstance(field, list) or not all(isinstance(i, str) for i in field):
        raise SuiteError(f"{where}: '{key}' must be a list of memory ids")
    return tuple(field)


def create_body(memory: SuiteMemory) -> dict[str, Any]:
    """The body of the Atomic Memory create a suite memory becomes (its ``created`` is ``observed_at``)."""
    body: dict[str, Any] = {"text": memory.text, "kind": memory.kind}
    if memory.created:
        body["observed_at"] = memory.created
    return body


# The contract fields a suite field becomes, by their suite names (``observed_at`` is the suite's ``created``).
_SUITE_NAMES = {"observed_at": "created"}


def _contract(where: str, model: type[BaseModel], body: dict[str, Any]) -> None:
    """Check ``body`` with the contract model the Server validates it with, so the suite's rules cannot drift
    from the Server's; the first failure is told as ``file:line: field: what is wrong``."""
    try:
        model.model_validate(body)
    except ValidationError as exc:
        err = readable_errors(exc.errors())[0]
        loc = tuple(_SUITE_NAMES.get(p, p) if isinstance(p, str) else p for p in err.get("loc", ()))
        raise SuiteError(f"{where}: {describe_error({**err, 'loc': loc})}") from None


def load_suite(directory: Path) -> Suite:
    """Read and check a suite directory; raises ``SuiteError`` with the first problem found."""
    if not directory.exists():
        raise SuiteError(f"{directory} does not exist: name a suite directory holding memories.jsonl and queries.jsonl")
    if not directory.is_dir():
        raise SuiteError(
            f"{directory} is not a directory: a suite is a directory holding memories.jsonl and queries.jsonl"
        )
    memories_path, queries_path = directory / "memories.jsonl", directory / "queries.jsonl"
    for path in (memories_path, queries_path):
        if not path.is_file():
            raise SuiteError(f"{path} is missing: a suite directory holds memories.jsonl and queries.jsonl")
    memories: list[SuiteMemory] = []
    scope_of: dict[str, str] = {}
    for where, value in _lines(memories_path):
        text = functools.partial(_text, where, value)
        memory = SuiteMemory(text("id"), text("scope_id"), text("kind"), str(value.get("created", "")), text("text"))
        if memory.kind not in MEMORY_KINDS:
            raise SuiteError(f"{where}: kind must be one of {', '.join(sorted(MEMORY_KINDS))}")
        if len(memory.text.encode("utf-8")) > MAX_BODY_BYTES:
            raise SuiteError(f"{where}: text is longer than {MAX_BODY_BYTES} UTF-8 bytes")
        _contract(where, ScopeCreate, {"scope_id": memory.scope_id, "title": "evaluation"})
        _contract(where, AtomicMemoryCreate, create_body(memory))
        if memory.id in scope_of:
            raise SuiteError(f"{where}: duplicate memory id {memory.id!r}")
        scope_of[memory.id] = memory.scope_id
        memories.append(memory)
    queries: list[SuiteQuery] = []
    seen: set[str] = set()
    for where, value in _lines(queries_path):
        text, ids = functools.partial(_text, where, value), functools.partial(_ids, where, value)
        query = SuiteQuery(
            text("id"), text("scope_id"), text("query"), text("category"), ids("expected"), ids("outdated")
        )
        if query.id in seen:
            raise SuiteError(f"{where}: duplicate query id {query.id!r}")
        if len(query.query) > MAX_QUERY_CHARS:
            raise SuiteError(f"{where}: query is longer than {MAX_QUERY_CHARS} characters")
        _contract(where, PrepareContextRequest, {"scope_id": query.scope_id, "query": query.query})
        if query.category == ABSTAIN and query.expected:
            raise SuiteError(f"{where}: 'expected' must be empty for an {ABSTAIN} query (nothing answers it)")
        seen.add(query.id)
        for memory_id in (*query.expected, *query.outdated):
            if scope_of.get(memory_id) != query.scope_id:
                raise SuiteError(f"{where}: memory {memory_id!r} is not a memory of Scope {query.scope_id!r}")
        queries.append(query)
    if not memories or not queries:
        raise SuiteError(f"{directory}: the suite needs at least one memory and one query")
    digest = hashlib.sha256()
    for path in (memories_path, queries_path):
        data = path.read_bytes()
        digest.update(f"{path.name}\0{len(data)}\0".encode())
        digest.update(data)
    return Suite(directory.resolve().name, "sha256:" + digest.hexdigest(), tuple(memories), tuple(queries))
