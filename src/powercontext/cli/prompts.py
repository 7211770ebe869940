"""``powercontext prompt``: show a Scope's Prompts, set a custom one, return to auto, retire.

Like ``cli.main``, only Typer loads at import; the client and the wire models load per command.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from powercontext.cli.common import (
    DEFAULT_URL,
    JsonOption,
    ScopeOption,
    UrlOption,
    fail,
    print_json,
    printed_as_json,
    run,
)
from powercontext.cli.terminal import say
from powercontext.prompt_keys import listed

if TYPE_CHECKING:
    from powercontext.client import PowerContextClient
    from powercontext.contract.prompts import PromptDemonstration, ResolvedPromptView

prompt_app = typer.Typer(
    no_args_is_help=True, help="Scope-owned Prompts: show what a Scope resolves, set a custom one, return to auto."
)

KeyArgument = Annotated[str, typer.Argument(help=f"A registered Prompt key: {listed()}.")]
ExpectedOption = Annotated[
    int | None,
    typer.Option(
        "--expected-revision",
        min=0,
        help="Refuse unless the prompt Artifact's head is this revision (0: none yet). Default: the head just read.",
    ),
]


def print_resolved(view: ResolvedPromptView, with_text: bool = False) -> None:
    if view.selection == "artifact" and view.artifact_address is not None:
        source = f"custom, revision {view.artifact_address.artifact.revision}"
    else:
        source = f"built-in version {view.builtin_version}"
        if view.head_revision:
            source += f" (prompt Artifact revision {view.head_revision} is {view.head_state or 'auto'})"
    say(f"{view.key} in {view.scope_id}: {source}; definition version {view.definition_version}")
    say(f"compiled digest {view.compiled_digest}; {view.demonstration_count} demonstrations")
    if with_text:
        if view.compiled_text is None:
            say("(the compiled text is shown only to callers that may write this Scope)", err=True)
        else:
            say("")
            say(view.compiled_text)


def _emit(view: ResolvedPromptView, as_json: bool, with_text: bool = False) -> None:
    if as_json:
        print_json(view.model_dump(mode="json"))
    else:
        print_resolved(view, with_text)


async def _head_revision(client: PowerContextClient, scope: str, key: str, expected: int | None) -> int:
    # Without --expected-revision the head just read is the base; the Server's compare-and-set still refuses
    # a revision written between that read and this write.
    return expected if expected is not None else (await client.get_prompt(scope, key)).head_revision


def _read_demonstrations(file: Path | None) -> list[PromptDemonstration]:
    from pydantic import ValidationError

    from powercontext.contract.prompts import PromptDemonstration

    if file is None:
        return []
    try:
        raw: Any = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise fail(f"cannot read --demonstrations-file as JSON: {type(exc).__name__}") from None
    if not isinstance(raw, list):
        raise fail('--demonstrations-file must hold a JSON array of {"input": …, "expected_output": …}')
    try:
        return [PromptDemonstration.model_validate(item) for item in raw]
    except ValidationError:
        raise fail('each demonstration must be an object with exactly "input" and "expected_output"') from None


@prompt_app.command("list")
def prompt_list(scope: ScopeOption, url: UrlOption = DEFAULT_URL, as_json: JsonOption = False) -> None:
    """Every registered Prompt key and what the Scope resolves for it."""
    items = run(url, lambda c: c.list_prompts(scope))
    if printed_as_json(items, as_json):
        return
    for i in items:
        head = f"head revision {i.head_revision} ({i.head_mode}, {i.head_state})" if i.head_revision else "no Artifact"
        say(f"{i.key}\t{i.status}\t{i.compiled_digest or '-'}\t{head}")


@prompt_app.command("show")
def prompt_show(
    key: KeyArgument,
    scope: ScopeOption,
    text: Annotated[bool, typer.Option("--text", help="Also print the compiled text (needs write access).")] = False,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """The Prompt the Scope resolves for KEY now: built-in or custom, its revision and compiled digest."""
    _emit(run(url, lambda c: c.get_prompt(scope, key)), as_json, text)


@prompt_app.command("set")
def prompt_set(
    key: KeyArgument,
    scope: ScopeOption,
    instructions: Annotated[str | None, typer.Option(help="The Scope's guidance for the model.")] = None,
    instructions_file: Annotated[Path | None, typer.Option(help="Read the instructions from a file.")] = None,
    demonstrations_file: Annotated[
        Path | None, typer.Option(help='A JSON array of {"input": …, "expected_output": …} examples.')
    ] = None,
    expected_revision: ExpectedOption = None,
    url: UrlOption = DEFAULT_URL,
    as_json: JsonOption = False,
) -> None:
    """Write a custom revision of the Scope's Prompt for KEY."""
    if (instructions is None) == (instructions_file is None):
        raise fail("give the instructions with --instructions or --instructions-file")
    if instructions_file is not None:
        try:
            instructions = instructions_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise fail(f"cannot read --instructions-file: {type(exc).__name__}") from None
    assert instructions is not None
    demonstrations = _read_demonstrations(demonstrations_file)

    async def call(client: PowerContextClient) -> ResolvedPromptView:
        base = await _head_revision(client, scope, key, expected_revision)
        return await client.set_prompt(scope, key, instructions, demonstrations, base)

    _emit(run(url, call), as_json)


def _key_command(
    change: Callable[[PowerContextClient, str, str, int | None], Awaitable[ResolvedPromptView]], doc: str
) -> Any:
    """``KEY --scope S [--expected-revision N]``: one change to the Scope's Prompt for KEY."""

    def command(
        key: KeyArgument,
        scope: ScopeOption,
        expected_revision: ExpectedOption = None,
        url: UrlOption = DEFAULT_URL,
        as_json: JsonOption = False,
    ) -> None:
        _emit(run(url, lambda c: change(c, scope, key, expected_revision)), as_json)

    command.__doc__ = doc
    return command


async def _set_auto(client: PowerContextClient, scope: str, key: str, expected: int | None) -> ResolvedPromptView:
    return await client.set_prompt_auto(scope, key, await _head_revision(client, scope, key, expected))


prompt_app.command("auto")(
    _key_command(_set_auto, "Return the Scope's Prompt for KEY to auto (the built-in), as a new revision.")
)
prompt_app.command("retire")(
    _key_command(
        lambda c, scope, key, expected: c.retire_prompt(scope, key, expected),
        "Retire the Scope's prompt Artifact for KEY: it uses the built-in; every revision stays readable.",
    )
)
