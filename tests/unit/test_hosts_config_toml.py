"""``.powercontext.toml`` is read by a fast path for the simple lines ``hosts install`` writes; whatever it
accepts, ``tomllib`` must read identically, and whatever ``tomllib`` rejects must still be refused."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.hosts.scope import ScopeConfigError, _simple_toml, load_config, unknown_key_message

# Pieces that TOML lines are made of, including the ones that make a line invalid or not simple.
PIECES = st.sampled_from(
    ["scope_id", "max_bytes", "a-b", "x.y", " ", "\t", "=", '"', "'", "\\", "\\n", "#", "\n", "\r", "\r\n", "0",
     "01", "+", "-", "1_0", "9", "é", "\x00", "\x01", "\x7f", "[t]", "true", "1.5", "\ufeff", '""', "[[a]]"]
)  # fmt: skip


def tomllib_result(text: str) -> dict[str, object] | None:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


@settings(max_examples=1500, deadline=None)
@given(st.lists(PIECES, max_size=14).map("".join))
def test_the_fast_path_agrees_with_tomllib_whenever_it_answers(text: str) -> None:
    fast = _simple_toml(text)
    if fast is not None:
        assert fast == tomllib_result(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('scope_id = "project:pay"\nmax_bytes = 4000\n', {"scope_id": "project:pay", "max_bytes": 4000}),
        ('# team scope\r\nscope_id="é\tx"  # why\r\n\n', {"scope_id": "é\tx"}),
        ("", {}),
    ],
)
def test_the_fast_path_reads_what_install_writes(text: str, expected: dict[str, object]) -> None:
    assert _simple_toml(text) == expected == tomllib.loads(text)


@pytest.mark.parametrize(
    ("text", "scope_id"),
    [('scope_id = "a\\u0062"', "ab"), ("max_bytes = 1_000\n", None), ("scope_id = 'literal'", "literal")],
)
def test_other_toml_still_goes_through_tomllib(tmp_path: Path, text: str, scope_id: str | None) -> None:
    path = tmp_path / ".powercontext.toml"
    path.write_text(text, encoding="utf-8")
    assert _simple_toml(text) is None
    assert load_config(path).scope_id == scope_id


@pytest.mark.parametrize("text", ['scope_id = "a"\nscope_id = "b"\n', "max_bytes = 0700\n", 'scope_id = "a"\r'])
def test_invalid_toml_is_refused_not_read_leniently(tmp_path: Path, text: str) -> None:
    path = tmp_path / ".powercontext.toml"
    path.write_text(text, encoding="utf-8", newline="")
    with pytest.raises(ScopeConfigError, match="cannot be read as TOML"):
        load_config(path)


@pytest.mark.parametrize(
    ("text", "unknown", "scope_id"),
    [
        ("capure = false\n", ("capure",), None),
        ('scope_id = "p"\nCapture = false\n', ("Capture",), "p"),
        ('scope_id = "p"\n[other]\nx = 1\n', ("other",), "p"),
    ],
)
def test_an_unknown_key_turns_capture_off_and_keeps_the_rest(
    tmp_path: Path, text: str, unknown: tuple[str, ...], scope_id: str | None
) -> None:
    # A misspelt ``capture = false`` must not leave capture on; a key of a newer version must not stop recall.
    path = tmp_path / ".powercontext.toml"
    path.write_text(text, encoding="utf-8")
    config = load_config(path)
    assert (config.unknown, config.capture, config.scope_id) == (unknown, False, scope_id)


def test_the_unknown_key_message_names_the_nearest_key() -> None:
    assert unknown_key_message("capure") == ".powercontext.toml: unknown key 'capure'; did you mean 'capture'?"
    assert unknown_key_message("other") == (
        ".powercontext.toml: unknown key 'other'; it may set only scope_id, max_bytes, capture"
    )
