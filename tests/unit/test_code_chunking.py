"""Chunking, line splitting, digests, language detection and identifier terms."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.code.chunking import (
    MAX_CHUNK_BYTES,
    MAX_CHUNK_LINES,
    MIN_CHUNK_LINES,
    WINDOW_LINES,
    LineRange,
    chunk_lines,
)
from powercontext.code.identifiers import code_query_terms, identifier_terms, path_terms, split_identifier
from powercontext.code.language import detect_language
from powercontext.code.lines import file_sha256, snippet_sha256, split_lines, split_text_lines
from tests.code_support import GO_MAIN, JAVA_MAIN, JS_CLIENT, PY_APP, RUST_LIB


def starts(text: str, language: str) -> list[int]:
    return [r.start_line for r in chunk_lines(split_text_lines(text), language)]


def line_no(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), start=1) if line.startswith(needle))


def filler(n: int, indent: str = "    ") -> str:
    return "".join(f"{indent}value_{i} = compute({i})\n" for i in range(n))


# -- lines and digests -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "lines"),
    [
        (b"", []),
        (b"a", [b"a"]),
        (b"a\n", [b"a\n"]),
        (b"a\r\nb", [b"a\r\n", b"b"]),
        (b"\n\n", [b"\n", b"\n"]),
        (b"a\rb\n", [b"a\rb\n"]),  # a lone CR is not a line break
    ],
)
def test_split_lines_keeps_terminators(data: bytes, lines: list[bytes]) -> None:
    assert split_lines(data) == lines
    assert [s.encode() for s in split_text_lines(data.decode())] == lines


@given(st.text())
def test_split_round_trips(text: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    assert b"".join(split_lines(data)) == data
    assert "".join(split_text_lines(text)) == text
    assert len(split_text_lines(text)) == len(split_lines(data))


def test_digests_are_sha256_of_the_exact_bytes() -> None:
    data = "é = 1\r\nsecond\nthird".encode()
    assert file_sha256(data) == "sha256:" + hashlib.sha256(data).hexdigest()
    first_two = "é = 1\r\nsecond\n".encode()
    assert snippet_sha256(split_lines(data), 1, 2) == "sha256:" + hashlib.sha256(first_two).hexdigest()
    assert snippet_sha256(split_lines(data), 3, 3) == "sha256:" + hashlib.sha256(b"third").hexdigest()


# -- chunk boundaries by language ----------------------------------------------------------------


def test_python_definitions_with_decorators_and_comments() -> None:
    text = '"""Doc."""\nimport os\n\n\n' + "# about f\n@decorate(\n    key=1,\n)\n@other\ndef f():\n" + filler(10)
    text += "\n\nclass C:\n" + filler(10) + "\n\nasync def g():\n" + filler(10)
    assert starts(text, "python") == [1, line_no(text, "class C"), line_no(text, "async def g")]
    # The import header is tiny, so it joins the first definition, comment and decorators included.
    assert chunk_lines(split_text_lines(text), "python")[0] == LineRange(1, line_no(text, "class C") - 1)


def test_python_separate_definitions_each_start_a_chunk() -> None:
    text = "".join(f"def f{i}():\n" + filler(10) + "\n" for i in range(3))
    assert starts(text, "python") == [1, 13, 25]


def test_python_big_class_splits_at_methods() -> None:
    methods = "".join(f"    def m{i}(self):\n" + filler(20, "        ") + "\n" for i in range(8))
    text = "class Big:\n" + methods
    ranges = chunk_lines(split_text_lines(text), "python")
    assert len(ranges) > 1
    lines = text.splitlines()
    for r in ranges[1:]:
        assert lines[r.start_line - 1].startswith("    def m"), r
    assert all(r.end_line - r.start_line + 1 <= WINDOW_LINES for r in ranges)


def test_sample_sources_start_at_their_definitions() -> None:
    # The tiny import header joins the decorated function; the class starts its own chunk.
    assert starts(PY_APP, "python") == [1, line_no(PY_APP, "class RetryPolicy")]
    js = JS_CLIENT + "".join(f"\nexport function helper{i}(x) {{\n" + filler(8, "  ") + "}\n" for i in range(2))
    assert line_no(js, "export function helper1") in starts(js, "javascript")
    go = GO_MAIN + "".join(f"\n// Helper{i} helps.\nfunc Helper{i}() {{\n" + filler(8, "\t") + "}\n" for i in range(2))
    assert line_no(go, "// Helper1 helps.") in starts(go, "go")
    rust = RUST_LIB + "".join(f"\npub fn helper_{i}() {{\n" + filler(8) + "}\n" for i in range(2))
    assert line_no(rust, "pub fn helper_1") in starts(rust, "rust")


def test_comments_and_attributes_stay_with_their_definition() -> None:
    rust = "use std::io;\n" + filler(10, "") + "\n/// Docs.\n#[derive(Debug)]\npub struct S {\n" + filler(10) + "}\n"
    assert line_no(rust, "/// Docs.") in starts(rust, "rust")
    go = "package x\n" + filler(10, "") + "\n// Run runs.\nfunc Run() {\n" + filler(10, "\t") + "}\n"
    assert line_no(go, "// Run runs.") in starts(go, "go")
    ts = "import x from 'y';\n" + filler(10, "") + "\n/** Docs. */\n@Component()\nexport class Widget {\n" + filler(10)
    assert line_no(ts, "/** Docs. */") in starts(ts + "}\n", "typescript")


def test_arrow_constants_and_exports_are_boundaries() -> None:
    text = "const a = 1;\n" + filler(10, "") + "const handler = async (req) => {\n" + filler(10, "  ") + "};\n"
    text += "export default {\n" + filler(10, "  ") + "};\n"
    got = starts(text, "javascript")
    assert line_no(text, "const handler") in got
    assert line_no(text, "export default") in got


def test_java_members_at_indentation_four() -> None:
    text = JAVA_MAIN.replace("    public boolean", "    /** Screens. */\n    @Override\n    public boolean")
    body = "".join(f"    public int method{i}() {{\n" + filler(10, "        ") + "    }\n\n" for i in range(2))
    text = text.replace("}\n", "}\n\n" + body, 1)
    got = starts(text, "java")
    assert line_no(text, "    public int method1") in got
    assert not any(text.splitlines()[s - 1].startswith("        ") for s in got)


def test_unknown_languages_use_fixed_windows() -> None:
    text = "".join(f"line {i}\n" for i in range(150))
    assert chunk_lines(split_text_lines(text), "text") == [LineRange(1, 60), LineRange(61, 120), LineRange(121, 150)]


def test_oversized_units_are_windowed_by_lines_and_bytes() -> None:
    text = "def huge():\n" + filler(300)
    ranges = chunk_lines(split_text_lines(text), "python")
    assert all(r.end_line - r.start_line + 1 <= MAX_CHUNK_LINES for r in ranges)
    wide = "def wide():\n" + "".join("    x = '" + "y" * 1000 + "'\n" for _ in range(40))
    lines = split_text_lines(wide)
    for r in chunk_lines(lines, "python"):
        assert len("".join(lines[r.start_line - 1 : r.end_line]).encode()) <= MAX_CHUNK_BYTES


def test_tiny_units_merge_within_a_window() -> None:
    text = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(30))
    ranges = chunk_lines(split_text_lines(text), "python")
    assert len(ranges) < 30
    assert all(r.end_line - r.start_line + 1 <= WINDOW_LINES for r in ranges)
    assert all(r.end_line - r.start_line + 1 >= MIN_CHUNK_LINES for r in ranges)


_LINE = st.sampled_from(
    ["def f():\n", "class C:\n", "    pass\n", "\n", "# c\n", "@d\n", "export function f() {\n", "}\n",
     "func F() {\n", "pub fn f() {\n", "    public void m() {\n", "x" * 3000 + "\n", "é中\n", "tail"]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINE, max_size=400), st.sampled_from(["python", "javascript", "go", "rust", "java", "text"]))
def test_chunks_partition_the_file_within_limits(lines: list[str], language: str) -> None:
    text = "".join(lines)
    split = split_text_lines(text)
    ranges = chunk_lines(split, language)
    covered = [n for r in ranges for n in range(r.start_line, r.end_line + 1)]
    assert covered == list(range(1, len(split) + 1))
    for r in ranges:
        assert r.end_line - r.start_line + 1 <= MAX_CHUNK_LINES
        assert len("".join(split[r.start_line - 1 : r.end_line]).encode()) <= MAX_CHUNK_BYTES


# -- languages -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "first", "language"),
    [
        ("src/a.py", "", "python"),
        ("web/x.tsx", "", "typescript"),
        ("web/x.mjs", "", "javascript"),
        ("cmd/main.go", "", "go"),
        ("lib.rs", "", "rust"),
        ("A.java", "", "java"),
        ("Dockerfile", "", "dockerfile"),
        ("README.MD", "", "markdown"),
        ("bin/tool", "#!/usr/bin/env python3", "python"),
        ("bin/run", "#!/bin/sh", "shell"),
        ("notes", "plain", "text"),
        ("weird.xyz", "", "text"),
    ],
)
def test_detect_language(path: str, first: str, language: str) -> None:
    assert detect_language(path, first) == language


# -- identifiers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "parts"),
    [
        ("parseHTTPResponse2", ["parse", "http", "response", "2"]),
        ("parse_http_response", ["parse", "http", "response"]),
        ("XMLHttpRequest", ["xml", "http", "request"]),
        ("__init__", ["init"]),
        ("HTTP2Server", ["http", "2", "server"]),
        ("MAX_RETRY_COUNT", ["max", "retry", "count"]),
        ("Größe2", ["grösse", "2"]),  # case-folded, like the query
        ("v1", ["v", "1"]),
    ],
)
def test_split_identifier(token: str, parts: list[str]) -> None:
    assert split_identifier(token) == parts


def test_identifier_terms_keep_the_whole_identifier_and_stems() -> None:
    got = identifier_terms("parseHTTPResponse2")
    assert got[0] == "parsehttpresponse2"
    assert {"parse", "http", "response", "2"} <= set(got)
    assert "pars" in got  # the stem, so "parsing" finds it
    assert identifier_terms("plain") == ["plain"]
    assert "parse_http_response" in identifier_terms("x = parse_http_response(raw)")


def test_path_terms_split_components() -> None:
    assert path_terms("src/payments/retry_policy.py") == [
        "src", "payments", "payment", "retry_policy", "retry", "retri", "policy", "polici", "py",
    ]  # fmt: skip


def test_query_terms_are_distinct_and_capped() -> None:
    assert code_query_terms("parse parse Parse") == ["parse", "pars"]
    assert len(code_query_terms(" ".join(f"word{i}x" for i in range(100)))) == 32
    assert identifier_terms("z" * 81) == []  # a blob, not an identifier
