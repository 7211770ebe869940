"""Every error code the Server can answer is listed in docs/operations.md's "Errors" section."""

from __future__ import annotations

import re
from pathlib import Path

import powercontext.server.app  # noqa: F401 - imports every route, so every error class is defined
from powercontext.code.errors import CodeError
from powercontext.domain.errors import RequestRefused
from powercontext.server.errors import _HTTP_CODES
from powercontext.store.errors import StoreError

OPERATIONS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def _codes_of(base: type) -> set[str]:
    codes: set[str] = set()
    for sub in base.__subclasses__():
        code = sub.__dict__.get("code")
        if isinstance(code, str):
            codes.add(code)
        codes |= _codes_of(sub)
    return codes


def test_every_error_code_the_server_answers_is_documented() -> None:
    text = OPERATIONS.read_text(encoding="utf-8")
    section = text[text.index("## Errors") : text.index("### What the schema accepts")]
    listed = set(re.findall(r"`([a-z0-9]+(?:-[a-z0-9]+)*)`", section))
    answered = _codes_of(StoreError) | _codes_of(CodeError) | _codes_of(RequestRefused)
    answered |= {"invalid-request", "internal-error", "body-too-large", "origin-forbidden", "misdirected-request"}
    answered |= {_HTTP_CODES[404], _HTTP_CODES[405]}
    answered -= {"code-error", "store-error"}  # abstract bases: never answered themselves
    assert answered - listed == set()
