"""Language names from file names (and a shebang for extension-less scripts)."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Final

TEXT: Final = "text"

_BY_SUFFIX: Final[dict[str, str]] = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".tsx": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp",
    ".cs": "csharp", ".kt": "kotlin", ".kts": "kotlin", ".swift": "swift", ".rb": "ruby", ".php": "php",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell",
    ".md": "markdown", ".markdown": "markdown", ".rst": "restructuredtext",
    ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".ini": "ini", ".cfg": "ini",
    ".html": "html", ".htm": "html", ".css": "css", ".scss": "css", ".sql": "sql", ".xml": "xml",
}  # fmt: skip
_BY_NAME: Final[dict[str, str]] = {"Dockerfile": "dockerfile", "Makefile": "make", "GNUmakefile": "make"}
_BY_INTERPRETER: Final[dict[str, str]] = {
    "python": "python", "python3": "python", "node": "javascript", "deno": "typescript",
    "sh": "shell", "bash": "shell", "zsh": "shell",
}  # fmt: skip


def detect_language(path: str, first_line: str = "") -> str:
    """The language of ``path`` (repository-relative, ``/``-separated); ``"text"`` when unknown."""
    name = PurePosixPath(path).name
    if name in _BY_NAME:
        return _BY_NAME[name]
    suffix = PurePosixPath(name).suffix.lower()
    if suffix in _BY_SUFFIX:
        return _BY_SUFFIX[suffix]
    if not suffix and first_line.startswith("#!"):
        words = first_line[2:].split()
        if words:
            # "#!/usr/bin/env python3" names the interpreter second, "#!/bin/sh" first.
            program = words[1] if words[0].endswith("/env") and len(words) > 1 else words[0]
            return _BY_INTERPRETER.get(program.rsplit("/", 1)[-1], TEXT)
    return TEXT
