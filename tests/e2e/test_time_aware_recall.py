"""Time-aware recall over HTTP: ``observed_at`` on writes, the date on each injected item, newer first when
memories disagree, and the ``possibly_supersedes`` hint on create."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests import forked
from tests.conftest import LiveServer, live_server
from tests.support import Api, artifact_id, error_code, parse_fragments, scope_with_history

OLD = "Deploys to production happen on Fridays after the 15:00 freeze, run by the release captain."
NEW = (
    "Deploys to production moved from Fridays to Tuesdays (after the March incident review); release captain unchanged."
)
FILLER = [
    "The release captain rotates weekly among the backend team.",
    "Production database backups run nightly at 02:00 UTC.",
    "Staging deploys happen on every merge to main.",
]


def _prepared_items(api: Api, scope: str, query: str) -> list[dict[str, object]]:
    r = api.prepare(scope, query)
    assert r.status_code == 200, r.text
    return [f.item for f in parse_fragments(r.json()["content"])]


def _history(api: Api) -> tuple[str, str, str]:
    """A Scope holding an old statement and the newer one that replaced it (written oldest last, so insertion
    order alone would favour the old one)."""
    writes = [(NEW, "decision", "2025-03-20T09:30:00Z"), (OLD, "fact", "2024-11-02")]
    scope, (new, old) = scope_with_history(api, FILLER, "2025-01-10", writes)
    return scope, old, new


def test_observed_at_is_stored_canonical_and_returned_by_reads(api: Api) -> None:
    scope = api.new_scope()
    created = api.add(scope, "Payments run on Postgres 16.", "fact", observed_at="2025-07-16T11:30:00+02:00")
    assert created["observed_at"] == "2025-07-16T09:30:00.000Z"
    assert created["created_at"] != created["observed_at"]
    head = api.head(scope, artifact_id(created)).json()
    assert head["observed_at"] == "2025-07-16T09:30:00.000Z"
    plain = api.add(scope, "Payments also run on Redis.", "fact")
    assert plain["observed_at"] == plain["created_at"]  # not given: when it was recorded


def test_a_batch_keeps_each_items_date_and_its_order(api: Api) -> None:
    scope = api.new_scope()
    items = [
        {"text": f"Step {n} of the migration runbook.", "kind": "fact", "observed_at": "2025-02-01"} for n in range(5)
    ]
    items.append({"text": "The runbook was last reviewed.", "kind": "fact"})
    r = api.post(f"/v1/scopes/{scope}/atomic-memory/batch", {"items": items})
    assert r.status_code == 201, r.text
    answered = r.json()["items"]
    assert [m["text"] for m in answered] == [i["text"] for i in items]
    assert [m["observed_at"] for m in answered[:5]] == ["2025-02-01T00:00:00.000Z"] * 5
    assert answered[5]["observed_at"] == answered[5]["created_at"]


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("2999-01-01T00:00:00Z", "in the future"),
        ("yesterday", "RFC 3339"),  # not even the characters of a date
        ("2025-02-30", "RFC 3339"),
        ("2025-07-16T09:30:00", "RFC 3339"),  # a date-time needs its zone
        ("0001-01-01T00:00:00+01:00", "RFC 3339"),  # before year 1 in UTC
    ],
)
def test_a_bad_observed_at_is_refused_with_a_message_that_says_why(api: Api, value: str, why: str) -> None:
    scope = api.new_scope()
    r = api.post(f"/v1/scopes/{scope}/atomic-memory", {"text": "x fact", "kind": "fact", "observed_at": value})
    assert r.status_code == 422
    assert error_code(r) == "invalid-request"
    assert why in r.json()["error"]["message"]


def test_a_little_clock_skew_is_accepted(api: Api) -> None:
    scope = api.new_scope()
    soon = (datetime.now(UTC) + timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert api.add(scope, "Clock skew fact.", "fact", observed_at=soon)["observed_at"].startswith(soon[:16])


def test_an_idempotent_create_without_observed_at_replays(api: Api) -> None:
    scope = api.new_scope()
    first = api.add(scope, "Replay me.", "fact", idempotency_key="k-1")
    again = api.post(
        f"/v1/scopes/{scope}/atomic-memory", {"text": "Replay me.", "kind": "fact", "idempotency_key": "k-1"}
    )
    assert again.status_code == 201 and artifact_id(again.json()) == artifact_id(first)
    other = {"text": "Replay me.", "kind": "fact", "idempotency_key": "k-1", "observed_at": "2025-01-01"}
    assert api.post(f"/v1/scopes/{scope}/atomic-memory", other).status_code == 409  # another body


def test_each_injected_item_carries_the_day_it_was_true(api: Api) -> None:
    scope, old_id, new_id = _history(api)
    items = _prepared_items(api, scope, "Which day do production deploys happen?")
    dates = {item["citation"]["artifact"]["artifact_id"]: item["observed"] for item in items}  # type: ignore[index]
    assert dates[old_id] == "2024-11-02"
    assert dates[new_id] == "2025-03-20"
    assert list(items[0]) == ["citation", "kind", "observed", "truncated", "content"]


def test_the_newer_statement_ranks_above_the_one_it_replaced(api: Api) -> None:
    scope, old_id, new_id = _history(api)
    ids = [
        i["citation"]["artifact"]["artifact_id"]
        for i in _prepared_items(api, scope, "When do we deploy to production?")
    ]  # type: ignore[index]
    assert ids.index(new_id) < ids.index(old_id)
    # Both stay: the rule orders, it never drops.
    assert old_id in ids


def test_a_query_about_history_is_left_in_ranked_order(api: Api) -> None:
    scope, old_id, new_id = _history(api)
    plain = [
        h["artifact_address"]["artifact"]["artifact_id"]
        for h in api.search(scope, "production deploys happen Fridays release captain").json()["hits"]
    ]
    assert plain.index(old_id) < plain.index(new_id), "the full-text order this test relies on"
    query = "Which day did production deploys originally happen on, Fridays with the release captain?"
    ids = [i["citation"]["artifact"]["artifact_id"] for i in _prepared_items(api, scope, query)]  # type: ignore[index]
    assert ids.index(old_id) < ids.index(new_id)


def test_create_answers_which_older_memories_it_may_replace(api: Api) -> None:
    scope = api.new_scope()
    old = api.add(scope, OLD, "fact", observed_at="2024-11-02")
    unrelated = api.add(scope, "The office coffee machine is on the third floor.", "fact", observed_at="2024-10-01")
    new = api.add(scope, NEW, "decision", observed_at="2025-03-20")
    assert new["possibly_supersedes"] == [artifact_id(old)]
    assert artifact_id(unrelated) not in new["possibly_supersedes"]
    # Only a hint: the older memory is still active.
    assert api.head(scope, artifact_id(old)).json()["state"] == "active"
    # An older statement written later does not claim to replace the newer one.
    older_still = api.add(scope, "Deploys to production moved to Fridays in 2023.", "fact", observed_at="2023-05-01")
    assert artifact_id(new) not in older_still["possibly_supersedes"]


def test_cli_memory_add_prints_the_retire_command(server: LiveServer, api: Api) -> None:
    scope = api.new_scope()
    old = api.add(scope, OLD, "fact", observed_at="2024-11-02")
    out = forked.run(
        [
            sys.executable,
            "-m",
            "powercontext",
            "memory",
            "add",
            NEW,
            "-s",
            scope,
            "--kind",
            "decision",
            "--observed-at",
            "2025-03-20",
            "--url",
            server.base_url,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "observed 2025-03-20" in out
    assert f"powercontext memory retire {artifact_id(old)} -s {scope}" in out


@pytest.fixture(params=["off", "minute"])
def dated_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Api]]:
    with live_server(tmp_path, {"POWERCONTEXT_CONTEXT_DATES": request.param}) as live:
        client = Api(live.base_url)
        try:
            yield request.param, client
        finally:
            client.close()


def test_context_dates_setting_turns_dates_off_or_to_the_minute(dated_server: tuple[str, Api]) -> None:
    precision, api = dated_server
    scope = api.new_scope()
    api.add(scope, "Deploys to production happen on Tuesdays.", "fact", observed_at="2025-03-20T09:30:59Z")
    r = api.prepare(scope, "When do production deploys happen?", include_receipt=True)
    fragments = parse_fragments(r.json()["content"])
    item = fragments[0].item
    if precision == "off":
        assert "observed" not in item
    else:
        assert item["observed"] == "2025-03-20T09:30Z"
    # The Receipt measures what was rendered, date included.
    assert r.json()["receipt"]["selected"][0]["rendered_bytes"] == fragments[0].size


def test_a_present_tense_question_with_before_or_first_still_gets_the_newer_statement_first(api: Api) -> None:
    scope, old_id, new_id = _history(api)
    for query in (
        "Which day do production deploys happen before the release captain signs off?",
        "On my first release as captain, which day do production deploys happen?",
    ):
        ids = [i["citation"]["artifact"]["artifact_id"] for i in _prepared_items(api, scope, query)]  # type: ignore[index]
        assert ids.index(new_id) < ids.index(old_id), query


def test_a_past_tense_question_with_before_keeps_the_ranked_order(api: Api) -> None:
    scope, old_id, new_id = _history(api)
    query = "Which day did production deploys happen before, Fridays with the release captain?"
    plain = [h["artifact_address"]["artifact"]["artifact_id"] for h in api.search(scope, query).json()["hits"]]
    assert plain.index(old_id) < plain.index(new_id), "the full-text order this test relies on"
    ids = [i["citation"]["artifact"]["artifact_id"] for i in _prepared_items(api, scope, query)]  # type: ignore[index]
    assert ids.index(old_id) < ids.index(new_id)


def test_an_addition_is_not_a_replacement(api: Api) -> None:
    scope = api.new_scope()
    old = api.add(scope, OLD, "fact", observed_at="2024-11-02")
    added = api.add(
        scope,
        "Production deploys on Fridays now also page the release captain at the 15:00 freeze.",
        "fact",
        observed_at="2025-02-01",
    )
    assert added["possibly_supersedes"] == []
    changed = api.add(
        scope,
        "Production deploys on Fridays now page the release captain at the 15:00 freeze.",
        "fact",
        observed_at="2025-02-02",
    )
    assert artifact_id(old) in changed["possibly_supersedes"]


def test_a_change_from_a_value_of_several_words_is_recognised(api: Api) -> None:
    scope = api.new_scope()
    old = api.add(
        scope,
        "Preview environments are deleted 48 h after the last push to the pull request.",
        "fact",
        observed_at="2025-01-29",
    )
    new = api.add(
        scope,
        "Preview environment lifetime cut from 48 h to 24 h after the last push.",
        "decision",
        observed_at="2025-04-09",
    )
    assert new["possibly_supersedes"] == [artifact_id(old)]


# -- successors that share no word with the question ------------------------------------------------

BOT_OLD = "Dependency updates come from Dependabot; each repo has its own .github/dependabot.yml."
# Shares no word with the question below: only its subject ("dependabot") links it to the statement it replaces.
BOT_NEW = (
    "Dependabot replaced by Renovate for all repos (Mar 18); shared preset github>acme/renovate-config."
    " Dependabot config files should be deleted."
)
BOT_QUESTION = "Which bot opens our dependency update PRs?"
BOT_FILLER = [
    "PRs from forks need a maintainer to approve their CI run.",
    "The release bot opens the changelog PR every Monday morning.",
    "Dependency licences are checked by the licence scanner on every PR.",
    "Update windows for the shared clusters are Tuesdays and Thursdays.",
    "The merge queue bot is owned by the developer experience team.",
    "Security updates to base images are applied within seven days.",
]


def _bot_history(api: Api, successor: str = BOT_NEW) -> tuple[str, str, str]:
    writes = [(BOT_OLD, "fact", "2024-11-25"), (successor, "decision", "2025-03-18")]
    scope, (old, new) = scope_with_history(api, BOT_FILLER, "2024-10-01", writes)
    return scope, old, new


def _ids(items: list[dict[str, object]]) -> list[str]:
    return [i["citation"]["artifact"]["artifact_id"] for i in items]  # type: ignore[index]


def test_a_successor_that_shares_no_word_with_the_question_is_injected_above_what_it_replaced(api: Api) -> None:
    scope, old_id, new_id = _bot_history(api)
    hits = api.search(scope, BOT_QUESTION).json()["hits"]
    searched = [h["artifact_address"]["artifact"]["artifact_id"] for h in hits]
    assert old_id in searched and new_id not in searched, "the question alone does not find the successor"
    ids = _ids(_prepared_items(api, scope, BOT_QUESTION))
    assert new_id in ids and old_id in ids
    assert ids.index(new_id) == ids.index(old_id) - 1


def test_a_later_memory_on_the_subject_that_changes_nothing_is_not_pulled(api: Api) -> None:
    scope, old_id, other_id = _bot_history(api, "Dependabot security alerts are mailed to the platform channel.")
    ids = _ids(_prepared_items(api, scope, BOT_QUESTION))
    assert old_id in ids and other_id not in ids


def test_a_question_about_history_gets_no_successor_pulled(api: Api) -> None:
    scope, old_id, new_id = _bot_history(api)
    ids = _ids(_prepared_items(api, scope, "Which bot originally opened our dependency update PRs?"))
    assert old_id in ids and new_id not in ids


def test_the_successor_is_pulled_on_embedded_seekdb_too(seekdb_server: LiveServer) -> None:
    seekdb_api = Api(seekdb_server.base_url)
    try:
        scope, old_id, new_id = _bot_history(seekdb_api)
        ids = _ids(_prepared_items(seekdb_api, scope, BOT_QUESTION))
    finally:
        seekdb_api.close()
    assert ids.index(new_id) == ids.index(old_id) - 1
