"""``include_code`` on prepare: code-only and mixed results, truncated ranges and their hashes, exact re-reads.

Expectations come from the files on disk (hashlib over the bytes, lines split by hand), never from
the code under test.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from tests.code_support import git, lines_of, make_git_repo, sha256_of_file, write
from tests.support import Api, parse_fragments, strict_json

CODE_ONLY = {"sections": []}
LONG_FUNCTION = "def reconcileLedgerBatch(rows):\n" + "".join(
    f"    total_{i} = rows[{i}]  # step {i}\n" for i in range(60)
)


@pytest.fixture
def indexed(api: Api, tmp_path: Path) -> tuple[str, Path, str]:
    repo = make_git_repo(tmp_path / "repo")
    write(repo, "src/payments/reconcile.py", LONG_FUNCTION)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "reconcile")
    sid = api.new_scope()
    r = api.post(f"/v1/scopes/{sid}/code/index", {"path": str(repo)})
    assert r.status_code in (200, 201), r.text
    return sid, repo, r.json()["fingerprint"]


def prepare(api: Api, sid: str, query: str, **extra: Any) -> dict[str, Any]:
    body = {"scope_id": sid, "query": query, "include_receipt": True, "include_code": True, **extra}
    r = api.post("/v1/context/prepare", body)
    assert r.status_code == 200, r.text
    parsed = strict_json(r.content)
    assert "receipt" in parsed, "the Receipt was dropped"
    return parsed


def code_refs(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [s["code_evidence"] for s in body["receipt"]["selected"] if s["family"] == "code"]


def test_code_only_result_cites_exact_ranges(api: Api, indexed: tuple[str, Path, str]) -> None:
    sid, repo, fingerprint = indexed
    body = prepare(api, sid, "parse webhook payload retry policy", assembly=CODE_ONLY)
    assert body["status"] == "ready"
    receipt = body["receipt"]
    assert receipt["selected"] and all(s["family"] == "code" for s in receipt["selected"])
    assert 1 <= len(receipt["selected"]) <= 4
    fragments = parse_fragments(body["content"])
    assert [f.item["citation"]["code_evidence"] for f in fragments] == code_refs(body)
    for fragment, selected in zip(fragments, receipt["selected"], strict=True):
        ref = selected["code_evidence"]
        assert ref["scope_id"] == sid and ref["fingerprint"] == fingerprint
        assert not ref["path"].startswith("/") and str(tmp_root(repo)) not in ref["path"]
        on_disk = repo / ref["path"]
        assert ref["file_sha256"] == sha256_of_file(on_disk)
        injected = lines_of(on_disk, ref["start_line"], ref["end_line"])
        assert fragment.item["content"].encode("utf-8") == injected
        assert ref["snippet_sha256"] == "sha256:" + hashlib.sha256(injected).hexdigest()
        assert selected["rendered_bytes"] == fragment.size
    groups = receipt["retrieval"]["searches"]
    assert groups == [
        {"round": 0, "family": "code", "mode": "code", "outcome": "completed", "fallback_reason": "none", "count": 1}
    ]
    assert str(repo) not in body["content"] and str(repo) not in str(receipt)


def tmp_root(repo: Path) -> Path:
    return repo.parent


def test_mixed_result_puts_code_after_history(api: Api, indexed: tuple[str, Path, str]) -> None:
    sid, _, _ = indexed
    api.add(sid, "Webhook payloads are parsed strictly: unknown fields are rejected", "decision")
    body = prepare(api, sid, "webhook payload")
    families = [s["family"] for s in body["receipt"]["selected"]]
    assert families[0] == "atomic-memory" and "code" in families
    assert families == sorted(families, key=lambda f: f == "code")  # historical items first, then code
    cited = [f.address for f in parse_fragments(body["content"])]
    expected = [s.get("artifact_address") or {"code_evidence": s["code_evidence"]} for s in body["receipt"]["selected"]]
    assert cited == expected


def test_a_truncated_code_item_is_cut_at_a_line_boundary(api: Api, indexed: tuple[str, Path, str]) -> None:
    sid, repo, _ = indexed
    # Words found only in reconcile.py, so its 61-line chunk ranks first and meets the whole budget.
    body = prepare(api, sid, "rows total step", assembly=CODE_ONLY, max_bytes=1200)
    truncated = [s for s in body["receipt"]["selected"] if s["truncated"]]
    assert truncated, "the 60-line function should not fit 1,200 bytes whole"
    assert body["receipt"]["truncated"] is True
    ref = truncated[0]["code_evidence"]
    assert ref["path"] == "src/payments/reconcile.py"
    full = lines_of(repo / ref["path"], 1, 61)
    injected = lines_of(repo / ref["path"], ref["start_line"], ref["end_line"])
    assert ref["end_line"] < 61 and injected.endswith(b"\n") and full.startswith(injected)
    assert ref["snippet_sha256"] == "sha256:" + hashlib.sha256(injected).hexdigest()
    item = next(f.item for f in parse_fragments(body["content"]) if f.item["citation"].get("code_evidence") == ref)
    assert item["content"].encode("utf-8") == injected and item["truncated"] is True
    # The exact read of the injected range returns those lines while the file is unchanged...
    query = {k: ref[k] for k in ("fingerprint", "path", "file_sha256", "start_line", "end_line")}
    r = api.http.get(f"/v1/scopes/{sid}/code/snippet", params=query)
    assert r.status_code == 200, r.text
    assert r.json()["text"].encode("utf-8") == injected
    assert r.json()["code_evidence"]["snippet_sha256"] == ref["snippet_sha256"]
    # ...and says the file changed, with its current hash, once it has.
    write(repo, ref["path"], LONG_FUNCTION.replace("step 3", "step three"))
    r = api.http.get(f"/v1/scopes/{sid}/code/snippet", params=query)
    assert r.status_code == 409 and r.json()["error"]["code"] == "code-changed"
    assert sha256_of_file(repo / ref["path"]) in r.json()["error"]["message"]


def test_without_a_work_tree_code_is_not_run(api: Api) -> None:
    sid = api.new_scope()
    api.add(sid, "codeword memory", "fact")
    body = prepare(api, sid, "codeword")
    code_groups = [g for g in body["receipt"]["retrieval"]["searches"] if g["family"] == "code"]
    assert code_groups == [
        {"round": 0, "family": "code", "mode": "none", "outcome": "not_run", "fallback_reason": "none", "count": 1}
    ]
    assert {"family": "code", "reason": "not_retrieved", "count": 1} in body["receipt"]["omitted"]


def test_without_include_code_the_code_index_is_not_touched(api: Api, indexed: tuple[str, Path, str]) -> None:
    sid, _, _ = indexed
    r = api.post("/v1/context/prepare", {"scope_id": sid, "query": "parse webhook", "include_receipt": True})
    receipt = strict_json(r.content)["receipt"]
    assert "code" not in {g["family"] for g in receipt["retrieval"]["searches"]}
    assert "code" not in {s["family"] for s in receipt["selected"]}


@pytest.mark.parametrize("value", [None, "true", 1])
def test_include_code_is_a_strict_boolean(api: Api, value: Any) -> None:
    r = api.post("/v1/context/prepare", {"scope_id": "s", "query": "q", "include_code": value})
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid-request"
