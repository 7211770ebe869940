"""Two guards a mutation check of the suite found untested (issue 37): each test here fails when its guard is
turned into the plausible bug named in its docstring.

- an exact-Scope grant is exact: ``project:payments`` does not also grant ``project:payments-archive``;
- code evidence takes at most half of a prepare's budget when history is assembled too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from powercontext.assembly.builder import PreparedContextBuilder
from powercontext.assembly.render import ENVELOPE_BYTES
from powercontext.domain.candidates import Candidate, CodeCandidate
from powercontext.domain.identity import ArtifactKey
from tests.conftest import LiveServer, live_server
from tests.support import TLS

EXACT, PREFIX, ADMIN = "exact-grant-token", "prefix-grant-token", "admin-grant-token"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def granted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("grants")
    principals = [
        {"name": "admin", "token_sha256": digest(ADMIN), "read": ["*"], "write": ["*"]},
        {"name": "exact", "token_sha256": digest(EXACT), "read": ["project:payments"], "write": ["team:a"]},
        {"name": "prefix", "token_sha256": digest(PREFIX), "read": ["project:payments*"], "write": []},
    ]
    (base / "access.json").write_text(json.dumps({"principals": principals}), encoding="utf-8")
    with live_server(base, {"POWERCONTEXT_ACCESS_FILE": str(base / "access.json")}) as live:
        with httpx.Client(base_url=live.base_url, headers={"Authorization": f"Bearer {ADMIN}"}, verify=TLS) as c:
            for sid in ("project:payments", "project:payments-archive", "team:a", "team:ab"):
                assert c.post("/v1/scopes", json={"scope_id": sid, "title": sid}).status_code == 201
        yield live


def status(live: LiveServer, token: str, method: str, path: str, body: object = None) -> int:
    with httpx.Client(base_url=live.base_url, headers={"Authorization": f"Bearer {token}"}, verify=TLS) as c:
        return c.request(method, path, json=body).status_code


def test_an_exact_scope_grant_is_not_a_prefix_grant(granted: LiveServer) -> None:
    """Fails if ``domain/access.py`` matched a pattern without ``*`` as a prefix."""
    assert status(granted, EXACT, "GET", "/v1/scopes/project:payments") == 200
    assert status(granted, EXACT, "GET", "/v1/scopes/project:payments-archive") == 403
    memory = {"text": "note", "kind": "note"}
    assert status(granted, EXACT, "POST", "/v1/scopes/team:a/atomic-memory", memory) == 201
    assert status(granted, EXACT, "POST", "/v1/scopes/team:ab/atomic-memory", memory) == 403
    # A trailing * is the prefix grant, and only it.
    assert status(granted, PREFIX, "GET", "/v1/scopes/project:payments-archive") == 200


def _code(n: int, lines: int) -> CodeCandidate:
    text = "".join(f"    total_{n}_{i} = compute(rows[{i}])  # step {i} of the reconciliation\n" for i in range(lines))
    sha = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    return CodeCandidate("project:payments", "wt1", f"src/m{n}.py", sha, 1, lines, sha, text)


def test_code_takes_at_most_half_the_budget_when_history_is_assembled(tmp_path: Path) -> None:
    """Fails if ``assembly/builder.py`` gave code the whole budget (history would get nothing or less)."""
    history = [
        Candidate(ArtifactKey("project:payments", "atomic-memory", f"am_{i:04d}", 1), "fact", "ledger note " * 60)
        for i in range(6)
    ]
    code = [_code(n, 40) for n in range(4)]
    max_bytes = 8192
    built = PreparedContextBuilder().build({"atomic-memory": history}, max_bytes, code=code)
    code_bytes = sum(item.rendered_bytes for item in built.code_items) + ENVELOPE_BYTES
    assert built.code_items and code_bytes <= max_bytes // 2
    assert len(built.items) >= 2, "history kept the other half"
    # With no history, code may use the whole budget (the half is only a share between the two).
    alone = PreparedContextBuilder().build({}, max_bytes, code=code)
    assert sum(item.rendered_bytes for item in alone.code_items) + ENVELOPE_BYTES > max_bytes // 2
