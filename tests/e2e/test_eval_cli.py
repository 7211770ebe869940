"""``powercontext eval run`` / ``eval compare`` as a user runs them: a real CLI subprocess, a real store.

The suite is written here, built so that every figure can be computed by hand (fts only, no provider):

* BM25 ranks a memory with the query term three times in five words above one that has it once in a
  longer sentence, so ``n`` such decoys put the expected memory at rank ``n + 1`` exactly;
* the prepare path takes 16 candidates per Scope and injects at most 8 (docs/receipts.md), and a
  deep search reads 50.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import forked
from tests.conftest import LiveServer

CLI = [sys.executable, "-m", "powercontext"]
SCRIPT = "<script>alert(1)</script>"


def _memory(mid: str, scope: str, text: str, created: str = "2025-01-01", kind: str = "fact") -> dict[str, str]:
    return {"id": mid, "scope_id": scope, "kind": kind, "created": created, "text": text}


def _query(
    qid: str, scope: str, query: str, category: str, expected: list[str], outdated: list[str] | None = None
) -> Any:
    return {
        "id": qid,
        "scope_id": scope,
        "query": query,
        "category": category,
        "expected": expected,
        "outdated": outdated or [],
    }


def write_suite(directory: Path) -> Path:
    memories = [
        _memory("h1", "t:hit", "The deploy window is Tuesday morning."),
        _memory("h2", "t:hit", "Rollbacks need Maria's approval."),
        # Ten decoys above the expected one: rank 11, inside the 16-item pool, below the 8-entry cap.
        *(_memory(f"c{i}", "t:cap", f"orchid orchid orchid decoy {i}") for i in range(10)),
        _memory("c-exp", "t:cap", "The orchid team owns the billing reports and their quarterly schedule."),
        # Twenty decoys: rank 21, outside the pool, inside the deep search.
        *(_memory(f"d{i}", "t:deep", f"tulip tulip tulip decoy {i}") for i in range(20)),
        _memory("d-exp", "t:deep", "The tulip service answers the partner callbacks within two seconds."),
        _memory("n-exp", "t:none", "Backups rotate weekly."),
        _memory("n-other", "t:none", "Logs ship to the archive."),
        _memory("b-big", "t:bytes", "lantern " * 150),
        _memory("b-exp", "t:bytes", "The lantern key is kept in the vault."),
        _memory("m-old", "t:time", "Pool size is 10.", created="2024-01-01", kind="decision"),
        _memory("m-new", "t:time", "We raised the connection limit to 20 in March.", created="2025-03-01"),
        # Filler in a Scope nobody queries keeps every query term's IDF positive.
        *(_memory(f"f{i}", "t:fill", f"Filler note number {i} about gardening.") for i in range(30)),
    ]
    queries = [
        _query("q-hit", "t:hit", "deploy window", "keyword", ["h1"]),
        _query("q-multi", "t:hit", "deploy window", "multi-hop", ["h1", "h2"]),
        _query("q-cap", "t:cap", "orchid", "paraphrase", ["c-exp"]),
        _query("q-deep", "t:deep", "tulip", "paraphrase", ["d-exp"]),
        _query("q-none", "t:none", f"kubernetes ingress {SCRIPT}", "paraphrase", ["n-exp"]),
        _query("q-abstain", "t:hit", "quantum entanglement", "abstain", []),
        _query("q-bytes", "t:bytes", "lantern", "keyword", ["b-exp"]),
        _query("q-old", "t:time", "pool size", "temporal", ["m-new"], ["m-old"]),
    ]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "memories.jsonl").write_text("".join(json.dumps(m) + "\n" for m in memories), encoding="utf-8")
    (directory / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    return directory


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env["COLUMNS"] = "200"
    return forked.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=env, check=False)


def run_eval(suite: Path, out: Path, *extra: str) -> dict[str, Any]:
    result = run_cli("eval", "run", str(suite), "--out", str(out), "--mode", "fts", *extra)
    assert result.returncode == 0, result.stderr
    assert (out / "report.json").is_file() and (out / "report.html").is_file()
    report: dict[str, Any] = json.loads((out / "report.json").read_text("utf-8"))
    return report


def by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {q["id"]: q for q in report["queries"]}


def misses(query: dict[str, Any]) -> list[tuple[str, str, int | None, int | None]]:
    return [(m["id"], m["reason"], m["pool_rank"], m["deep_rank"]) for m in query["misses"]]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_suite(tmp_path_factory.mktemp("suite"))


@pytest.fixture(scope="module")
def default_run(suite: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_eval(suite, tmp_path_factory.mktemp("default"))


def test_scores_per_query_and_category_match_hand_computed_values(default_run: dict[str, Any]) -> None:
    q = by_id(default_run)
    assert (q["q-hit"]["selected"][:1], q["q-hit"]["reciprocal_rank"], q["q-hit"]["hit_at_k"]) == (["h1"], 1.0, True)
    assert q["q-multi"]["recall_at_k"] == 0.5 and q["q-multi"]["all_at_k"] is False
    assert q["q-bytes"]["selected"] == ["b-big", "b-exp"] and q["q-bytes"]["reciprocal_rank"] == 0.5
    assert len(q["q-cap"]["selected"]) == 8 and "c-exp" not in q["q-cap"]["selected"]
    assert q["q-abstain"]["content_bytes"] == 0
    assert q["q-old"]["selected"] == ["m-old"]
    assert q["q-old"]["outdated_instead"] is True and q["q-old"]["outdated_over_current"] is True

    categories = default_run["categories"]
    assert (categories["keyword"]["hit_at_k"], categories["keyword"]["mrr"]) == (1.0, 0.75)
    assert (categories["multi-hop"]["recall_at_k"], categories["multi-hop"]["mrr"]) == (0.5, 1.0)
    assert (categories["paraphrase"]["queries"], categories["paraphrase"]["hit_at_k"]) == (3, 0.0)
    assert categories["temporal"]["outdated_instead"] == 1.0
    assert (categories["abstain"]["abstain_mean_bytes"], categories["abstain"]["abstain_empty"]) == (0.0, 1.0)
    overall = default_run["overall"]
    assert overall["scored"] == 7 and overall["queries"] == 8
    assert overall["hit_at_k"] == round(3 / 7, 4)
    assert overall["mrr"] == round(2.5 / 7, 4)


def test_every_miss_has_its_reason_and_ranks(default_run: dict[str, Any]) -> None:
    q = by_id(default_run)
    assert misses(q["q-cap"]) == [("c-exp", "entry_limit", 11, 11)]
    assert misses(q["q-deep"]) == [("d-exp", "outside_pool", None, 21)]
    assert misses(q["q-none"]) == [("n-exp", "not_retrieved", None, None)]
    assert misses(q["q-multi"]) == [("h2", "not_retrieved", None, None)]
    assert misses(q["q-old"]) == [("m-new", "not_retrieved", None, None)]
    assert misses(q["q-hit"]) == []
    reasons = default_run["overall"]["miss_reasons"]
    assert (reasons["not_retrieved"], reasons["outside_pool"], reasons["entry_limit"]) == (3, 1, 1)
    help_ = default_run["what_would_help"]
    assert help_["higher_cap"]["misses"] == 1 and help_["hybrid"]["misses"] == 4
    # The retrieval path that ran is on every query, from its Receipt.
    searches = q["q-cap"]["receipt"]["searches"]
    assert {
        "round": 0,
        "family": "atomic-memory",
        "mode": "fts",
        "outcome": "completed",
        "fallback_reason": "none",
        "count": 1,
    } in searches
    assert default_run["join_exact"] == 8


def test_report_records_what_reproduces_the_run(default_run: dict[str, Any], suite: Path) -> None:
    import hashlib

    digest = hashlib.sha256()
    for name in ("memories.jsonl", "queries.jsonl"):
        data = (suite / name).read_bytes()
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    assert default_run["suite"]["digest"] == "sha256:" + digest.hexdigest()
    settings = default_run["settings"]
    assert (settings["mode"], settings["max_bytes"], settings["sections"], settings["k"]) == ("fts", 8000, [], 8)
    assert default_run["search_modes"] == {"fts": 8}
    command = default_run["settings"]["target"]["command"]
    assert command[:4] == ["powercontext", "eval", "run", str(suite)]
    assert command[6:] == ["--mode", "fts", "--max-bytes", "8000", "--k", "8"]
    assert default_run["ingest"]["memories"] == 2 + 11 + 21 + 2 + 2 + 2 + 30


def test_a_section_limit_is_a_family_limit_miss(suite: Path, tmp_path: Path) -> None:
    report = run_eval(suite, tmp_path, "--section", "memory=2")
    q = by_id(report)
    assert misses(q["q-cap"]) == [("c-exp", "family_limit", 11, 11)]
    assert len(q["q-cap"]["selected"]) == 2
    assert report["settings"]["sections"] == [{"family": "memory", "limit": 2}]


def test_a_tiny_budget_is_a_byte_budget_miss_and_compare_lists_the_flip(
    suite: Path, tmp_path: Path, default_run: dict[str, Any]
) -> None:
    small = run_eval(suite, tmp_path / "small", "--max-bytes", "512")
    q = by_id(small)
    assert q["q-bytes"]["selected"] == ["b-big"]
    assert misses(q["q-bytes"]) == [("b-exp", "byte_budget", 2, 2)]
    assert small["overall"]["miss_reasons"]["byte_budget"] >= 1

    before = tmp_path / "before.json"
    before.write_text(json.dumps(default_run), encoding="utf-8")
    out = tmp_path / "compare.json"
    result = run_cli("eval", "compare", str(before), str(tmp_path / "small" / "report.json"), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert re.search(r"lost\s+q-bytes \(keyword\) RR 0\.500 → 0\.000", result.stdout), result.stdout
    comparison = json.loads(out.read_text("utf-8"))
    assert [f["id"] for f in comparison["flipped"]["lost"]] == ["q-bytes"]
    assert comparison["flipped"]["gained"] == []
    assert comparison["categories"]["keyword"]["hit_at_k"] == {"before": 1.0, "after": 0.5, "delta": -0.5}
    assert comparison["categories"]["keyword"]["miss_reasons"]["byte_budget"] == {"before": 0, "after": 1}
    # Without --out the comparison is written beside the second report.
    again = run_cli("eval", "compare", str(before), str(tmp_path / "small" / "report.json"))
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "small" / "compare.json").read_text("utf-8")) == comparison


def test_html_report_is_self_contained_and_escapes_content(suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "html"
    report = run_eval(suite, out)
    html = (out / "report.html").read_text("utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.IGNORECASE)
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # the query text, shown as text
    assert html.count("<svg") >= 3
    for category in report["categories"]:
        assert f"<td>{category}</td>" in html


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs chromium")
def test_html_report_opens_in_headless_chromium(suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_eval(suite, out)
    result = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", (out / "report.html").as_uri()],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "PowerContext evaluation" in result.stdout and "<svg" in result.stdout


def test_eval_against_a_running_server_uses_fresh_scopes(server: LiveServer, suite: Path, tmp_path: Path) -> None:
    first = run_cli("eval", "run", str(suite), "--out", str(tmp_path / "a"), "--url", server.base_url)
    second = run_cli("eval", "run", str(suite), "--out", str(tmp_path / "b"), "--url", server.base_url)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    a = json.loads((tmp_path / "a" / "report.json").read_text("utf-8"))
    b = json.loads((tmp_path / "b" / "report.json").read_text("utf-8"))
    assert (a["settings"]["target"]["kind"], a["settings"]["target"]["url"]) == ("url", server.base_url)
    assert a["settings"]["scope_prefix"] != b["settings"]["scope_prefix"]
    # A second run into fresh Scopes sees exactly the same store contents, so the same scores.
    for report in (a, b):
        assert report["overall"]["hit_at_k"] == round(3 / 7, 4)
        assert misses(by_id(report)["q-cap"]) == [("c-exp", "entry_limit", 11, 11)]


def test_a_broken_suite_is_one_line_naming_file_and_line(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite")
    with (suite / "queries.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps(_query("q-bad", "t:hit", "x", "keyword", ["c-exp"])) + "\n")
    result = run_cli("eval", "run", str(suite), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "queries.jsonl:9" in result.stderr and "c-exp" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_bad_server_setting_is_one_line(suite: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env["POWERCONTEXT_HYBRID_FUSION"] = "borda"
    result = forked.run(
        [*CLI, "eval", "run", str(suite), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "POWERCONTEXT_HYBRID_FUSION must be one of score, rrf" in result.stderr
    assert "Traceback" not in result.stderr


def test_hybrid_mode_without_a_provider_is_refused(suite: Path, tmp_path: Path) -> None:
    result = run_cli("eval", "run", str(suite), "--out", str(tmp_path / "out"), "--mode", "hybrid")
    assert result.returncode == 1
    assert "POWERCONTEXT_EMBEDDINGS" in result.stderr and "Traceback" not in result.stderr


def test_hybrid_with_the_local_model_rereads_the_same_pool(suite: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env["POWERCONTEXT_EMBEDDINGS"] = "local"
    result = forked.run(
        [*CLI, "eval", "run", str(suite), "--out", str(tmp_path), "--mode", "hybrid"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text("utf-8"))
    assert report["search_modes"] == {"hybrid": 8}
    assert report["server"]["embedding_model"] == "local:all-MiniLM-L6-v2:int8-v1"
    assert report["settings"]["environment"]["POWERCONTEXT_EMBEDDINGS"] == "local"
    # The pool re-read with the mode the Receipt names is the prepare's own pool: every join is exact.
    assert report["join_exact"] == 8
    assert by_id(report)["q-hit"]["selected"][0] == "h1"
