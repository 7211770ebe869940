"""``memory import`` checks the whole file before it sends anything: a key two lines give to different memories,
a leading BOM, a lone surrogate escape and several bad lines, each told by line number, with the real CLI against
the live Server."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tests.conftest import LiveServer
from tests.e2e.test_cli import run_cli


@pytest.fixture
def scope(server: LiveServer) -> str:
    scope_id = f"import-{uuid.uuid4().hex[:12]}"
    assert run_cli("scope", "create", scope_id, url=server.base_url).returncode == 0
    return scope_id


def _line(text: str, **extra: str) -> str:
    return json.dumps({"text": text, "kind": "fact", **extra}) + "\n"


def _stored(url: str, scope: str) -> int:
    listed = run_cli("memory", "list", "-s", scope, "--limit", "200", "--json", url=url)
    assert listed.returncode == 0, listed.stderr
    page = json.loads(listed.stdout)
    assert page["next_cursor"] is None
    return len(page["items"])


def test_a_key_repeated_with_another_memory_is_refused_before_anything_is_sent(
    server: LiveServer, scope: str, tmp_path: Path
) -> None:
    # 1,000 lines: the repeat (line 601) is in the second batch of 500, after the first batch would be stored.
    lines = [_line(f"settlement fact number {i}") for i in range(1, 1001)]
    lines[3] = _line("the first memory of the key", idempotency_key="k-shared")
    lines[600] = _line("another memory under the same key", idempotency_key="k-shared")
    source = tmp_path / "repeat.jsonl"
    source.write_text("".join(lines), encoding="utf-8")
    result = run_cli("memory", "import", str(source), "-s", scope, url=server.base_url)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(f"error: invalid-import-file: {source}:601: idempotency_key is line 4's")
    assert "nothing was imported" in result.stderr
    assert "another memory" not in result.stderr and "first memory" not in result.stderr  # line numbers, not text
    assert _stored(server.base_url, scope) == 0


def test_a_key_repeated_with_the_same_memory_is_stored_once(server: LiveServer, scope: str, tmp_path: Path) -> None:
    same = _line("the deploy window is Tuesday", idempotency_key="k-twice")
    source = tmp_path / "twice.jsonl"
    source.write_text(same + _line("the ledger closes at noon") + same, encoding="utf-8")
    result = run_cli("memory", "import", str(source), "-s", scope, url=server.base_url)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"imported 2 memories into {scope}; 1 already existed"
    assert _stored(server.base_url, scope) == 2


def test_a_leading_bom_is_not_part_of_the_first_line(server: LiveServer, scope: str, tmp_path: Path) -> None:
    source = tmp_path / "windows.jsonl"
    source.write_bytes(b"\xef\xbb\xbf" + (_line("first line after a BOM") + _line("second line")).encode("utf-8"))
    result = run_cli("memory", "import", str(source), "-s", scope, url=server.base_url)
    assert result.returncode == 0, result.stderr
    assert _stored(server.base_url, scope) == 2


def test_a_lone_surrogate_and_several_bad_lines_are_told_as_such(
    server: LiveServer, scope: str, tmp_path: Path
) -> None:
    lines = [_line(f"good line {i}") for i in range(12)]
    lines[1] = '{"text": "half a pair \\ud800 here", "kind": "fact"}\n'
    for number in (4, 6, 8, 9, 10, 11):
        lines[number - 1] = '{"text": "unterminated\n'
    source = tmp_path / "bad.jsonl"
    source.write_text("".join(lines), encoding="utf-8")
    result = run_cli("memory", "import", str(source), "-s", scope, url=server.base_url)
    assert result.returncode == 1
    said = result.stderr.splitlines()
    assert said[0] == (
        f"error: invalid-import-file: {source}:2: a \\uD800-\\uDFFF escape that is not half of a surrogate pair"
        " (a lone surrogate is not text); nothing was imported"
    )
    assert [line.split(": ", 1)[0] for line in said[1:5]] == [f"  also {source}:{n}" for n in (4, 6, 8, 9)]
    assert all("not a JSON object on one line (EOF while parsing" in line for line in said[1:5])
    assert said[5:] == ["  (only the first 5 bad lines are named)"]
    assert _stored(server.base_url, scope) == 0
