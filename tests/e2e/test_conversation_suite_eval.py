"""``powercontext eval run`` reads the committed conversational suite end to end (one conversation of it).

The whole suite takes a few seconds in fts; one conversation is enough to show that the format, the four
categories and the per-Scope ingestion work with the real CLI, the in-process Server and a real SQLite store.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from powercontext.evaluation.suite import load_suite
from tests import forked

SUITE_DIR = Path(__file__).resolve().parents[2] / "examples" / "eval" / "conversations"
CLI = [sys.executable, "-m", "powercontext"]


def _slice(directory: Path, scope: str) -> Path:
    """The suite's lines for one conversation's Scope, bytes unchanged."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("memories.jsonl", "queries.jsonl"):
        lines = (SUITE_DIR / name).read_text("utf-8").splitlines(keepends=True)
        kept = [line for line in lines if json.loads(line)["scope_id"] == scope]
        (directory / name).write_text("".join(kept), encoding="utf-8")
    return directory


def test_one_conversation_runs_end_to_end_in_fts(tmp_path: Path) -> None:
    suite_dir = _slice(tmp_path / "c01", "chat:c01")
    suite = load_suite(suite_dir)
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    result = forked.run(
        [*CLI, "eval", "run", str(suite_dir), "--out", str(tmp_path / "out"), "--mode", "fts", "--json"],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads((tmp_path / "out" / "report.json").read_text("utf-8"))
    assert report["suite"]["digest"] == suite.digest
    assert report["ingest"]["memories"] == len(suite.memories)
    assert set(report["categories"]) == {"single-hop", "multi-hop", "temporal", "abstain"}
    assert report["search_modes"] == {"fts": len(suite.queries)}
    by_id = {q["id"]: q for q in report["queries"]}
    assert set(by_id) == {q.id for q in suite.queries}
    abstain = [q for q in suite.queries if q.category == "abstain"]
    assert report["overall"]["abstain"] == len(abstain)
    assert report["overall"]["scored"] == len(suite.queries) - len(abstain)
    # Every score is read from what prepare injected: a hit means the expected turn is among the selected ones.
    for query in (q for q in suite.queries if q.category != "abstain"):
        scored = by_id[query.id]
        assert scored["hit_at_k"] == any(i in scored["selected"][:8] for i in query.expected)
    hits = [by_id[q.id]["hit_at_k"] for q in suite.queries if q.category != "abstain"]
    assert report["overall"]["hit_at_k"] == round(sum(hits) / len(hits), 4)
