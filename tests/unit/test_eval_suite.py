"""Suite loading: every problem is one message naming the file, the line and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from powercontext.evaluation.suite import SuiteError, load_suite


def write(tmp_path: Path, memories: list[dict[str, object]], queries: list[dict[str, object]]) -> Path:
    (tmp_path / "memories.jsonl").write_text("".join(json.dumps(m) + "\n" for m in memories), encoding="utf-8")
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    return tmp_path


MEMORY = {"id": "m1", "scope_id": "s", "kind": "fact", "created": "2025-01-02", "text": "Deploys run on Tuesday."}
QUERY = {"id": "q1", "scope_id": "s", "query": "when do deploys run", "category": "keyword", "expected": ["m1"]}


def test_a_valid_suite_loads_with_a_digest_of_its_bytes(tmp_path: Path) -> None:
    older = {**MEMORY, "id": "m0", "created": "2024-12-31"}
    suite = load_suite(write(tmp_path, [MEMORY, older], [QUERY]))
    assert [m.id for m in suite.memories_in_ingest_order("s")] == ["m0", "m1"]
    assert suite.queries[0].outdated == ()
    digest = suite.digest
    (tmp_path / "queries.jsonl").write_text(json.dumps({**QUERY, "query": "other"}) + "\n", encoding="utf-8")
    assert load_suite(tmp_path).digest != digest


@pytest.mark.parametrize(
    ("memories", "queries", "message"),
    [
        ([{**MEMORY, "kind": "rumour"}], [QUERY], "memories.jsonl:1: kind must be one of"),
        ([{**MEMORY, "text": "x" * 8001}], [QUERY], "memories.jsonl:1: text is longer than 8000"),
        ([MEMORY, MEMORY], [QUERY], "memories.jsonl:2: duplicate memory id 'm1'"),
        ([MEMORY], [{**QUERY, "query": "q" * 8193}], "queries.jsonl:1: query is longer than 8192"),
        ([MEMORY], [{**QUERY, "expected": ["m9"]}], "queries.jsonl:1: memory 'm9' is not a memory of Scope 's'"),
        ([MEMORY], [{**QUERY, "expected": "m1"}], "queries.jsonl:1: 'expected' must be a list"),
        ([MEMORY], [{**QUERY, "query": " "}], "queries.jsonl:1: 'query' must be a non-empty string"),
    ],
)
def test_a_broken_suite_names_the_line(
    tmp_path: Path, memories: list[dict[str, object]], queries: list[dict[str, object]], message: str
) -> None:
    with pytest.raises(SuiteError) as caught:
        load_suite(write(tmp_path, memories, queries))
    assert str(caught.value).startswith(message)


def test_not_json_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match=r"memories\.jsonl is missing"):
        load_suite(tmp_path)
    write(tmp_path, [MEMORY], [QUERY])
    (tmp_path / "memories.jsonl").write_text("{not json\n", encoding="utf-8")
    with pytest.raises(SuiteError, match=r"memories\.jsonl:1: not JSON"):
        load_suite(tmp_path)
