"""``powercontext topic|experience|profile``: Topic Memory, Experience and Profile from the command line.

Like ``cli.main``, only Typer loads at import; the client, the wire models and Rich load per command.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from powercontext.cli.common import (
    DEFAULT_URL,
    EXIT_USAGE,
    JsonOption,
    ScopeOption,
    UrlOption,
    fail,
    printed_as_json,
    run,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

    from powercontext.client import PowerContextClient

topic_app = typer.Typer(no_args_is_help=True, help="Write, search and read Topic Memory.")
experience_app = typer.Typer(no_args_is_help=True, help="Propose, review, search and read Experience.")
candidate_app = typer.Typer(no_args_is_help=True, help="Experience Candidates: add one, show it, review it.")
profile_app = typer.Typer(no_args_is_help=True, help="Commit and read the Scope's Profile.")
experience_app.add_typer(candidate_app, name="candidate")

TagOption = Annotated[list[str] | None, typer.Option("--tag", help="A tag (repeatable).")]
_NUMBER_HELP = {
    "--revision": "An exact revision instead of the head.",
    "--expected-revision": "Refuse unless the head is this revision.",
}
RevisionOption = Annotated[int | None, typer.Option(min=1, help=_NUMBER_HELP["--revision"])]
ExpectedOption = Annotated[
    int | None, typer.Option("--expected-revision", min=1, help=_NUMBER_HELP["--expected-revision"])
]


def _emit(model: BaseModel, as_json: bool, view: str) -> None:
    if printed_as_json(model, as_json):
        return
    from powercontext.cli import family_views

    getattr(family_views, view)(model)


def _read_text(inline: str | None, file: Path | None, name: str) -> str | None:
    """``--name TEXT`` or ``--name-file PATH`` (``-`` reads stdin); not both."""
    if inline is not None and file is not None:
        raise fail(f"give --{name} or --{name}-file, not both")
    if file is None:
        return inline
    if str(file) == "-":
        return sys.stdin.read()
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise fail(f"cannot read --{name}-file: {type(exc).__name__}") from None


def _scoped_command(
    call: Callable[[PowerContextClient, str, str, Any], Awaitable[BaseModel]],
    view: str,
    doc: str,
    argument: Literal["ARTIFACT-ID", "QUERY"],
    option: Literal["--revision", "--expected-revision", "--limit"],
) -> Any:
    """``ARGUMENT --scope S [OPTION N]`` calling ``call(client, scope, argument, option)``: read one revision,
    change a lifecycle or search, the same for every family. Typer reads the options' declarations from the
    defaults, so one signature serves each argument and option."""
    subject_argument: Any = typer.Argument(metavar=argument)
    number_option: Any = (
        typer.Option(10, option, min=1, max=20)
        if option == "--limit"
        else typer.Option(None, option, min=1, help=_NUMBER_HELP[option])
    )

    def command(
        scope: ScopeOption,
        subject: str = subject_argument,
        number: int | None = number_option,
        url: UrlOption = DEFAULT_URL,
        as_json: JsonOption = False,
    ) -> None:
        _emit(run(url, lambda c: call(c, scope, subject, number)), as_json, view)

    command.__doc__ = doc
    return command


# -- topic -------------------------------------------------------------------------------------


@topic_app.command("create")
def topic_create(
    title: Annotated[str, typer.Argument(help="One line naming the topic.")],
    scope: ScopeOption,
    body: Annotated[str | None, typer.Option(help="What is known about the topic.")] = None,
    body_file: Annotated[Path | None, typer.Option(help="Read the body from a file ('-' for stdin).")] = None,
    tag: TagOption = None,
    idempotency_key: Annotated[str | None, typer.Option(help="Retry-safe key.")] = None,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Create a Topic Memory."""
    text = _read_text(body, body_file, "body")
    if text is None:
        raise fail("give the body with --body or --body-file")
    topic = run(url, lambda c: c.create_topic(scope, title, text, tag or [], idempotency_key))
    _emit(topic, as_json, "print_topic")


@topic_app.command("revise")
def topic_revise(
    artifact_id: Annotated[str, typer.Argument()],
    scope: ScopeOption,
    expected_revision: Annotated[int, typer.Option(min=1, help="The head revision you are changing.")],
    title: Annotated[str | None, typer.Option(help="New title; default keeps it.")] = None,
    body: Annotated[str | None, typer.Option(help="New body; default keeps it.")] = None,
    body_file: Annotated[Path | None, typer.Option(help="Read the new body from a file ('-' for stdin).")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Replace the tags (repeatable).")] = None,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Write a new revision (refused with revision-conflict if the head moved)."""
    text = _read_text(body, body_file, "body")
    if title is None and text is None and tag is None:
        raise fail("nothing to change: give --title, --body, --body-file or --tag")
    topic = run(url, lambda c: c.revise_topic(scope, artifact_id, expected_revision, title, text, tag))
    _emit(topic, as_json, "print_topic")


def _topic_lifecycle(action: Literal["retire", "restore"]) -> Any:
    return _scoped_command(
        lambda c, scope, artifact_id, expected: c.change_topic_lifecycle(scope, artifact_id, action, expected),
        "print_topic",
        f"{action.capitalize()} a Topic Memory (its revisions stay readable exactly).",
        "ARTIFACT-ID",
        "--expected-revision",
    )


topic_app.command("retire")(_topic_lifecycle("retire"))
topic_app.command("restore")(_topic_lifecycle("restore"))
topic_app.command("get")(
    _scoped_command(
        lambda c, scope, artifact_id, revision: c.get_topic(scope, artifact_id, revision),
        "print_topic",
        "Read the head, or one exact revision, of a Topic Memory.",
        "ARTIFACT-ID",
        "--revision",
    )
)
topic_app.command("search")(
    _scoped_command(
        lambda c, scope, query, limit: c.search_topics(scope, query, limit),
        "print_topic_hits",
        "Search active Topic Memory heads (title and body).",
        "QUERY",
        "--limit",
    )
)


# -- experience --------------------------------------------------------------------------------

_SITUATION = typer.Option(help="When the lesson applies.")
_WORKED = typer.Option("--worked", help="What worked.")
_AVOID = typer.Option("--avoid", help="What to avoid.")
TargetOption = Annotated[
    str | None, typer.Option("--target", help="An Experience this revises (needs --expected-revision).")
]


def _revise_only(flag: str, help_text: str, minimum: int | None = None) -> Any:
    """An option of ``candidate review`` that only ``revise`` takes; a field it does not give is kept."""
    return typer.Option(flag, help=f"revise: {help_text}", min=minimum)


def _check_target_pair(target: str | None, expected_revision: int | None) -> None:
    if (target is None) != (expected_revision is None):
        raise fail("--target and --expected-revision go together")


@candidate_app.command("add")
def candidate_add(
    scope: ScopeOption,
    situation: Annotated[str, _SITUATION],
    worked: Annotated[str, _WORKED],
    avoid: Annotated[str, _AVOID],
    tag: TagOption = None,
    target: TargetOption = None,
    expected_revision: ExpectedOption = None,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Propose an Experience; it becomes one only when a reviewer approves it."""
    _check_target_pair(target, expected_revision)
    candidate = run(
        url, lambda c: c.propose_experience(scope, situation, worked, avoid, tag or [], target, expected_revision)
    )
    _emit(candidate, as_json, "print_candidate")


@candidate_app.command("show")
def candidate_show(
    candidate_id: Annotated[str, typer.Argument()],
    scope: ScopeOption,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Show a Candidate and its review outcome."""
    _emit(run(url, lambda c: c.get_candidate(scope, candidate_id)), as_json, "print_candidate")


@candidate_app.command("review")
def candidate_review(
    candidate_id: Annotated[str, typer.Argument()],
    decision: Annotated[str, typer.Argument(help="approve, reject or revise.")],
    scope: ScopeOption,
    reason: Annotated[str | None, typer.Option(help="reject: a short kebab-case reason code.")] = None,
    expected_candidate_revision: Annotated[
        int | None, typer.Option(min=1, help="Refuse unless the Candidate is at this revision (required to revise).")
    ] = None,
    situation: Annotated[str | None, _revise_only("--situation", "when the lesson applies.")] = None,
    worked: Annotated[str | None, _revise_only("--worked", "what worked.")] = None,
    avoid: Annotated[str | None, _revise_only("--avoid", "what to avoid.")] = None,
    tag: Annotated[list[str] | None, _revise_only("--tag", "the tags, all of them (repeatable).")] = None,
    target: Annotated[
        str | None, _revise_only("--target", "an Experience this revises (with --expected-revision).")
    ] = None,
    expected_revision: Annotated[
        int | None, _revise_only("--expected-revision", "the target's head revision.", minimum=1)
    ] = None,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Approve, reject, or revise a pending Candidate (revise keeps fields you do not give)."""
    from powercontext.contract.families import ExperienceReviewResult, ReviseDecision

    cas = expected_candidate_revision
    _check_review_options(decision, cas, reason, (situation, worked, avoid, tag, target, expected_revision))
    _check_target_pair(target, expected_revision)

    async def review(client: PowerContextClient) -> ExperienceReviewResult:
        if decision == "approve":
            return await client.approve_candidate(scope, candidate_id, cas)
        if decision == "reject":
            return await client.reject_candidate(scope, candidate_id, reason, cas)
        assert cas is not None  # checked above, before any request
        current = await client.get_candidate(scope, candidate_id)
        keep_target = target is None  # with its expected revision: the two go together
        revised = ReviseDecision(
            decision="revise",
            expected_candidate_revision=cas,
            situation=situation if situation is not None else current.situation,
            what_worked=worked if worked is not None else current.what_worked,
            what_to_avoid=avoid if avoid is not None else current.what_to_avoid,
            tags=tag if tag is not None else current.tags,
            target_artifact_id=current.target_artifact_id if keep_target else target,
            expected_revision=current.expected_revision if keep_target else expected_revision,
        )
        return await client.review_candidate(scope, candidate_id, revised)

    result = run(url, review)
    if printed_as_json(result, as_json):
        return
    from powercontext.cli import family_views

    family_views.print_candidate(result.candidate)


def _check_review_options(
    decision: str, cas: int | None, reason: str | None, revise_fields: tuple[object, ...]
) -> None:
    """Refuse a decision that is not one, and options the decision would silently ignore."""
    if decision not in ("approve", "reject", "revise"):
        raise fail("the decision is one of: approve, reject, revise")
    if decision == "revise" and cas is None:
        raise fail("revise needs --expected-candidate-revision")
    if decision != "revise" and any(value is not None for value in revise_fields):
        raise fail("only revise takes --situation, --worked, --avoid, --tag, --target and --expected-revision")
    if decision != "reject" and reason is not None:
        raise fail("only reject takes --reason")


experience_app.command("retire")(
    _scoped_command(
        lambda c, scope, artifact_id, expected: c.retire_experience(scope, artifact_id, expected),
        "print_experience",
        "Retire an Experience (its revisions stay readable exactly).",
        "ARTIFACT-ID",
        "--expected-revision",
    )
)
experience_app.command("get")(
    _scoped_command(
        lambda c, scope, artifact_id, revision: c.get_experience(scope, artifact_id, revision),
        "print_experience",
        "Read the head, or one exact revision, of an Experience.",
        "ARTIFACT-ID",
        "--revision",
    )
)
experience_app.command("search")(
    _scoped_command(
        lambda c, scope, query, limit: c.search_experiences(scope, query, limit),
        "print_experience_hits",
        "Search active (approved, not retired) Experience heads.",
        "QUERY",
        "--limit",
    )
)


# -- profile -----------------------------------------------------------------------------------


def _entries_from_file(file: Path) -> list[tuple[str, str]]:
    """A JSON object ``{key: value}``, a list of ``{key, value}``, or ``{"entries": [...]}``."""
    try:
        data = json.loads(sys.stdin.read() if str(file) == "-" else file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise fail(f"invalid-request: cannot read --file as JSON ({type(exc).__name__})", EXIT_USAGE) from None
    if isinstance(data, dict) and isinstance(data.get("entries"), list):
        data = data["entries"]
    if isinstance(data, dict) and all(isinstance(v, str) for v in data.values()):
        return list(data.items())
    if isinstance(data, list) and all(
        isinstance(e, dict) and set(e) == {"key", "value"} and all(isinstance(v, str) for v in e.values()) for e in data
    ):
        return [(e["key"], e["value"]) for e in data]
    shapes = '{"key": "value", ...} or [{"key": ..., "value": ...}, ...]'
    raise fail(f"invalid-request: --file must hold {shapes}", EXIT_USAGE)


def _entries_from_args(pairs: list[str]) -> list[tuple[str, str]]:
    entries = []
    for number, pair in enumerate(pairs, start=1):
        key, sep, value = pair.partition("=")
        if not sep:
            raise fail(f"invalid-request: argument {number} is not KEY=VALUE (e.g. language=python)", EXIT_USAGE)
        entries.append((key.strip(), value))
    return entries


@profile_app.command("set")
def profile_set(
    scope: ScopeOption,
    pairs: Annotated[list[str] | None, typer.Argument(help="Entries as key=value (the whole Profile).")] = None,
    file: Annotated[Path | None, typer.Option("--file", help="Entries from a JSON file ('-' for stdin).")] = None,
    expected_revision: Annotated[
        int, typer.Option(min=0, help="The committed head you are replacing; 0 for the first commit.")
    ] = 0,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Commit the next Profile snapshot: it replaces every entry."""
    if bool(pairs) == (file is not None):
        raise fail("give key=value arguments or --file, not both and not neither")
    entries = _entries_from_file(file) if file is not None else _entries_from_args(pairs or [])
    _emit(run(url, lambda c: c.set_profile(scope, entries, expected_revision)), as_json, "print_profile")


@profile_app.command("get")
def profile_get(
    scope: ScopeOption,
    revision: RevisionOption = None,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Read the committed Profile, or one exact revision of it."""
    _emit(run(url, lambda c: c.get_profile(scope, revision)), as_json, "print_profile")
