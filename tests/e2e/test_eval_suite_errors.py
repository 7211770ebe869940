"""``eval run`` / ``eval compare`` on a suite, an output or a report they cannot use: one line naming the file,
the line and the field, exit 2 (a usage error), before anything is ingested; never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_eval_cli import _memory, _query, run_cli, write_suite


def _one_line(result: Any, code: int = 2) -> str:
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # no traceback, no "ingest 0/1" progress
    line: str = lines[0]
    assert line.startswith("error: "), line
    return line


def _append(path: Path, value: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(value) + "\n")


MEMORY_LINE = 71  # write_suite's memories.jsonl has 70 lines: an appended one is line 71


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("created", "yesterday", "memories.jsonl:71: created:"),
        ("scope_id", "bad scope!", "memories.jsonl:71: scope_id: must start with a letter or digit"),
        ("kind", "gossip", "memories.jsonl:71: kind must be one of"),
        ("text", "   ", "memories.jsonl:71: 'text' must be a non-empty string"),
    ],
)
def test_a_bad_memory_field_stops_the_run_before_ingest(tmp_path: Path, field: str, value: str, says: str) -> None:
    suite = write_suite(tmp_path / "suite")
    assert len((suite / "memories.jsonl").read_text("utf-8").splitlines()) == MEMORY_LINE - 1
    _append(suite / "memories.jsonl", {**_memory("m-bad", "t:new", "alpha"), field: value})
    line = _one_line(run_cli("eval", "run", str(suite), "--out", str(tmp_path / "out")))
    assert line.startswith("error: invalid-suite: ") and says in line, line
    assert not (tmp_path / "out").exists()


def test_an_abstain_query_with_expected_memories_is_refused(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite")
    _append(suite / "queries.jsonl", _query("q-x", "t:hit", "anything", "abstain", ["h1"]))
    line = _one_line(run_cli("eval", "run", str(suite), "--out", str(tmp_path / "out")))
    assert "queries.jsonl:9: 'expected' must be empty for an abstain query" in line


def test_a_missing_suite_directory_is_a_usage_error(tmp_path: Path) -> None:
    line = _one_line(run_cli("eval", "run", str(tmp_path / "nope"), "--out", str(tmp_path / "out")))
    assert f"{tmp_path / 'nope'} does not exist" in line


def test_a_file_given_as_the_suite_must_be_a_directory(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite")
    target = suite / "memories.jsonl"
    line = _one_line(run_cli("eval", "run", str(target), "--out", str(tmp_path / "out")))
    assert f"{target} is not a directory" in line and "memories.jsonl/memories.jsonl" not in line


def test_an_out_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite")
    out = tmp_path / "taken"
    out.write_text("keep\n", encoding="utf-8")
    line = _one_line(run_cli("eval", "run", str(suite), "--out", str(out)))
    assert line.startswith("error: --out: ") and "is a file" in line
    assert out.read_text("utf-8") == "keep\n"


def test_compare_names_the_report_that_is_not_json(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text("<html></html>\n", encoding="utf-8")
    line = _one_line(run_cli("eval", "compare", str(page), str(tmp_path / "nope.json")), code=1)
    assert f"invalid-report: {page} is not JSON" in line
