"""Without a model, a captured prompt writes memories only from its real explicit statements.

A real Server on loopback extracts in its own background worker. With the default policy (``explicit: apply``) an
extracted statement is active at once and injected into every later prompt, so a line that only looks like one
(an idiom, a question, a quote, code) must write nothing.
"""

from __future__ import annotations

from typing import Any

from tests.support import Api, wait_until

LOOKALIKES = (
    "never mind, ignore my last message\n"
    "Always-on feature flags are confusing?\n"
    "we decided?\n"
    "> note: quoted from the old wiki\n"
    "```\n"
    "Never gonna give you up\n"
    "remember: this is inside a code block\n"
    "```\n"
)


def _extraction(api: Api, scope_id: str, content: str) -> dict[str, Any]:
    r = api.post(f"/v1/scopes/{scope_id}/sources", {"kind": "prompt", "content": content})
    assert r.status_code == 201, r.text
    path = f"/v1/scopes/{scope_id}/sources/{r.json()['source_id']}"

    def settled() -> bool:
        state = api.get(path).json()["extraction"]
        return bool(state["status"] == "done" or state["reason"] == "waiting-for-model")

    assert wait_until(settled, timeout=20)
    extraction: dict[str, Any] = api.get(path).json()["extraction"]
    return extraction


def _memories(api: Api, scope_id: str) -> list[tuple[str, str]]:
    items = api.get(f"/v1/scopes/{scope_id}/atomic-memory").json()["items"]
    return sorted((m["kind"], m["text"]) for m in items)


def test_lines_that_only_look_like_statements_write_nothing(api: Api) -> None:
    scope_id = api.new_scope()
    extraction = _extraction(api, scope_id, LOOKALIKES)
    assert (extraction["status"], extraction["reason"], extraction["writes"]) == ("pending", "waiting-for-model", [])
    assert _memories(api, scope_id) == []


def test_real_statements_among_lookalikes_are_written_as_the_user_wrote_them(api: Api) -> None:
    scope_id = api.new_scope()
    content = (
        "remember: the settlement cutoff is 23:00 UTC\n"
        + LOOKALIKES
        + "- we decided to use Postgres\nnever commit secrets to the repo\n"
    )
    extraction = _extraction(api, scope_id, content)
    assert extraction["status"] == "done" and len(extraction["writes"]) == 3
    assert _memories(api, scope_id) == [
        ("constraint", "never commit secrets to the repo"),
        ("decision", "we decided to use Postgres"),
        ("fact", "the settlement cutoff is 23:00 UTC"),
    ]
