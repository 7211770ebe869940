"""``powercontext memory export``: what it writes, ``memory import`` reads back into the same memories, once."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import LiveServer
from tests.e2e.test_cli import run_cli
from tests.support import Api

MEMORIES = [
    {"text": "Payments run on PostgreSQL 16.", "kind": "fact", "tags": ["db"], "observed_at": "2025-01-02T03:04:05Z"},
    {"text": "Ship on Tuesdays — never Fridays; 日本語も.", "kind": "decision", "tags": []},
    {"text": "Line one\nline two \u202eboth kept exactly", "kind": "note", "tags": ["multi", "line"]},
]


def _stored(api: Api, scope: str) -> list[tuple[str, str, list[str], str]]:
    items = api.get(f"/v1/scopes/{scope}/atomic-memory?limit=200").json()["items"]
    return sorted((m["text"], m["kind"], m["tags"], m["observed_at"]) for m in items)


def test_an_export_imports_into_another_scope_as_the_same_memories_once(
    server: LiveServer, api: Api, tmp_path: Path
) -> None:
    url = server.base_url
    source = api.new_scope(prefix="export-from")
    for body in MEMORIES:
        api.add(source, **body)
    page_of_two = api.new_scope(prefix="export-many")
    batch = [{"text": f"note {n}", "kind": "note"} for n in range(205)]  # past one page of the list route (200)
    assert api.post(f"/v1/scopes/{page_of_two}/atomic-memory/batch", {"items": batch}).status_code in (200, 201)

    exported = run_cli("memory", "export", "-s", source, url=url)
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    assert sorted(line["text"] for line in lines) == sorted(m["text"] for m in MEMORIES)

    out = tmp_path / "backup.jsonl"
    to_file = run_cli("memory", "export", "-s", source, "--out", str(out), "--json", url=url)
    assert to_file.returncode == 0, to_file.stderr
    assert json.loads(to_file.stdout) == {"scope_id": source, "exported": 3, "file": str(out)}
    target = api.new_scope(prefix="export-to")
    first = run_cli("memory", "import", str(out), "-s", target, "--json", url=url)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["imported"] == 3
    again = run_cli("memory", "import", str(out), "-s", target, "--json", url=url)
    assert json.loads(again.stdout) == {"scope_id": target, "imported": 0, "existed": 3}
    assert _stored(api, target) == _stored(api, source)

    many = tmp_path / "many.jsonl"
    assert run_cli("memory", "export", "-s", page_of_two, "-o", str(many), url=url).returncode == 0
    assert len(many.read_text(encoding="utf-8").splitlines()) == 205


def test_an_existing_file_is_kept_and_a_failed_export_leaves_no_file(
    server: LiveServer, api: Api, tmp_path: Path
) -> None:
    url = server.base_url
    scope = api.new_scope(prefix="export-keep")
    api.add(scope, "kept")
    out = tmp_path / "existing.jsonl"
    out.write_text("precious\n", encoding="utf-8")
    refused = run_cli("memory", "export", "-s", scope, "-o", str(out), url=url)
    assert refused.returncode == 2 and "--force" in refused.stderr
    assert out.read_text(encoding="utf-8") == "precious\n"
    assert run_cli("memory", "export", "-s", scope, "-o", str(out), "--force", url=url).returncode == 0
    assert json.loads(out.read_text(encoding="utf-8"))["text"] == "kept"

    missing = tmp_path / "missing.jsonl"
    unknown = run_cli("memory", "export", "-s", "no-such-scope-here", "-o", str(missing), url=url)
    assert unknown.returncode == 3 and "scope-not-found" in unknown.stderr
    assert list(tmp_path.iterdir()) == [out]  # neither the file nor its temporary part
    no_json = run_cli("memory", "export", "-s", scope, "--json", url=url)
    assert no_json.returncode == 2 and "--out" in no_json.stderr and no_json.stdout == ""
