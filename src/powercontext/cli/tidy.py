"""Plain help text: a value's name (``--scope SCOPE``, ``--limit N``) instead of Typer's ``<str>``/``<bool>``.

Typer labels every parameter with its Python type; for a person reading ``--help`` the option's own
name says more, and a flag needs no label at all. Applied once to the built command tree (Typer's own
Click, so the classes come from ``typer.core``).
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument, TyperOption


def _label(param: TyperOption | TyperArgument) -> str:
    kind = param.type_descriptor
    if kind.is_choice and kind.choices:
        return "|".join(str(choice) for choice in kind.choices)
    if kind.is_ranged or kind.annotation in (int, float):
        return "N"
    return (param.name or "value").upper().replace("_", "-")


def _no_type(ctx: Any) -> None:
    return None


def tidy_metavars(command: Any) -> None:
    """Give every parameter of ``command`` and its sub-commands a plain metavar (flags none)."""
    for param in command.params:
        if isinstance(param, TyperOption):
            if param.is_flag or param.count:
                param.metavar = ""
            elif param.metavar is None:
                param.metavar = _label(param)
        elif isinstance(param, TyperArgument):
            if param.metavar is None:
                param.metavar = _label(param)
            # Typer prints an argument's type next to its name; the name already is the label.
            param.display_type_rich = _no_type  # type: ignore[method-assign]
    _flag_help_option(command)
    for sub in getattr(command, "commands", {}).values():
        tidy_metavars(sub)


def _flag_help_option(command: Any) -> None:
    # Click builds ``--help`` on first use; label it as the flag it is when it is built.
    build = command.get_help_option

    def built(ctx: Any) -> Any:
        option = build(ctx)
        if option is not None:
            option.metavar = ""
        return option

    command.get_help_option = built
