"""The Rich side of terminal-safe output (its own module: Rich is imported only by the commands that draw)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from powercontext.cli.terminal import terminal_safe


class TerminalConsole(Console):
    """A Rich console whose every string, printed or in a table cell, is made terminal-safe before markup is
    read; Rich itself strips only BEL, BS, VT, FF and CR, and passes ESC through."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(terminal_safe(text), **kwargs)


def safe_text(text: str) -> Text:
    """A Rich ``Text`` of ``text`` (never read as markup), terminal-safe."""
    return Text(terminal_safe(text))
