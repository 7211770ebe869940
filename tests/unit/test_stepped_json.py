"""Large bodies are parsed in steps; the result, and every refusal, is what ``json.loads`` gives (with
``unique_members``: an object naming a key twice is refused)."""

from __future__ import annotations

import json
import sys
import time
import tracemalloc

import pytest

from powercontext.server.stepped_json import DuplicateKey, loads_in_steps, unique_members

DOCUMENTS = [
    b'{"items": [{"text": "\\u0007\\ud83d\\ude00", "tags": ["a", "b"]}, {"n": 1.5e3, "x": null}], "k": true}',
    b'  {"a": [ 1 , {"b": [2, [3, {"c": {}}]]} ] , "e": "\\u00e9", "f": []}\n',
    '{"caf\u00e9": ["\u00fcber"]}'.encode("utf-16"),  # json.loads detects the encoding of bytes
    '{"caf\u00e9": ["\u00fcber", "\U0001d11e"]}'.encode("utf-32-le"),
    '\ufeff{"k": ["\u00e9\U0001d11e"]}'.encode(),  # a UTF-8 byte order mark, which json.loads skips in bytes
    b"[]",
    b"{}",
    b'"a string"',
    b"-12.5",
    b'[{"x": NaN}, Infinity, -Infinity]',
    # numbers whose every prefix is a number too: split anywhere, they must not be cut short
    b'{"n": [12345, -0.125, 1.5e+30, 2E-7, 0, 10], "m": 123456789012345678901234567890}',
    b"[1.25e-3,7,8.5]",
    b'{"items": [1e5, 22, true, false, null, "\xe2\x82\xac\xf0\x9d\x84\x9e"]}',  # raw multi-byte UTF-8
    b'{"s": "\xed\xa0\x80"}',  # an encoded lone surrogate: json.loads decodes bytes with "surrogatepass"
]
BROKEN = [
    b'{"a": [1, 2,]}',
    b'{"a": 1} x',
    b"[1 2]",
    b'{"a" 1}',
    b"",
    b"{",
    b'{"a": [',
    b"{a: 1}",
    b"[1,]",
    b'{"a": 1.}',
    b'{"a": 1e}',
    b'{"a": [1] 2}',
    b'{"a": "unterminated}',
    b"[tru]",
    b"   ",
]
PIECES = [1, 2, 3, 5, 8, 64, 1 << 18]  # bytes decoded per step: tiny pieces put an edge inside every token


@pytest.mark.parametrize("piece_bytes", PIECES)
@pytest.mark.parametrize("document", DOCUMENTS)
def test_the_result_is_what_json_loads_gives(document: bytes, piece_bytes: int) -> None:
    assert repr(loads_in_steps(document, piece_bytes)) == repr(json.loads(document))


@pytest.mark.parametrize("piece_bytes", PIECES)
@pytest.mark.parametrize("document", BROKEN)
def test_a_broken_document_is_refused_as_json_loads_refuses_it(document: bytes, piece_bytes: int) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(document)
    with pytest.raises(json.JSONDecodeError):
        loads_in_steps(document, piece_bytes)


@pytest.mark.parametrize("piece_bytes", [1, 7, 1 << 18])
def test_invalid_utf8_is_refused_as_json_loads_refuses_it(piece_bytes: int) -> None:
    document = b'{"a": ["\xff\xfe"]}'
    with pytest.raises(UnicodeDecodeError):
        json.loads(document)
    with pytest.raises(UnicodeDecodeError):
        loads_in_steps(document, piece_bytes)


def test_a_large_batch_spanning_many_pieces_is_what_json_loads_gives() -> None:
    item = {"text": "\x07\u00e9" * 900, "kind": "fact", "tags": ["\U0001d11e" * 8] * 6, "n": [1.5, -20, 3e-5]}
    document = json.dumps({"items": [item] * 300, "tail": 12345}, indent=2, ensure_ascii=False).encode()
    assert len(document) > 40 * 4096
    assert loads_in_steps(document, 4096) == json.loads(document)


def test_one_value_longer_than_many_pieces_is_parsed_whole() -> None:
    document = json.dumps({"items": ["x" * 200_000, [1] * 50_000]}).encode()
    assert loads_in_steps(document, 1024) == json.loads(document)


def largest_batch() -> bytes:
    """The largest valid batch create, as ``bench/body_parse_liveness.py`` and the body-limit tests build it."""
    item = {
        "text": "\x07" * 8000,
        "kind": "constraint",
        "tags": ["\U0001d11e" * 64] * 32,
        "idempotency_key": "\\" * 128,
    }
    return json.dumps({"items": [item] * 500}, ensure_ascii=True, indent=4).encode("ascii")


def test_no_step_of_a_largest_batch_holds_the_interpreter_lock_long() -> None:
    # A C function holds the lock from call to return; the event loop waits that long for it. Watched with
    # the profiler (it sees every C call) in thread CPU time, which a busy machine barely changes: one decode
    # of the whole document took 31 ms, one json.loads 60+ ms; a piece or an item here takes about 1 ms.
    body = largest_batch()
    longest = 0.0
    started: dict[int, float] = {}

    def watch(frame: object, event: str, function: object) -> None:
        nonlocal longest
        if event == "c_call":
            started[id(function)] = time.thread_time()
        elif event in ("c_return", "c_exception") and id(function) in started:
            longest = max(longest, time.thread_time() - started.pop(id(function)))

    sys.setprofile(watch)
    try:
        value = loads_in_steps(body)
    finally:
        sys.setprofile(None)
    assert len(value["items"]) == 500
    assert longest < 0.010, f"one C call held the interpreter lock for {longest * 1000:.1f} ms of CPU"


def test_a_largest_batch_is_never_decoded_whole() -> None:
    # Decoded whole, its text alone is as large as its bytes (36.8 MB); in pieces, the parse holds the values
    # (about 10 MB here) and a window of about 1 MiB.
    body = largest_batch()
    tracemalloc.start()
    try:
        loads_in_steps(body)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(body) * 0.6, f"peak {peak:,} bytes for a {len(body):,}-byte document"


@pytest.mark.parametrize(
    "document",
    [
        b'{"items": [' + b"1," * 25_000 + b'{"a": [1]}], "k": 2}',
        b'{"m": {' + b"".join(b'"k%d": %d, ' % (i % 12_000, i) for i in range(25_000)) + b'"z": []}, "n": 1}',
        b"[" + b"[]," * 12_000 + b"[1 2]]",
        b'{"items": [' + b"1," * 12_000 + b"1,]}",
    ],
)
def test_a_container_too_long_to_walk_is_still_what_json_loads_gives(document: bytes) -> None:
    try:
        expected: object = repr(json.loads(document, object_pairs_hook=unique_members))
    except (json.JSONDecodeError, DuplicateKey) as exc:
        expected = type(exc)
    if expected in (json.JSONDecodeError, DuplicateKey):
        with pytest.raises(expected):  # type: ignore[call-overload]
            loads_in_steps(document, 4096)
    else:
        assert repr(loads_in_steps(document, 4096)) == expected


@pytest.mark.parametrize("piece_bytes", PIECES)
@pytest.mark.parametrize(
    ("document", "key"),
    [
        (b'{"a": 1, "a": 2}', "a"),  # json.loads keeps the last: no client means that
        (b'{"items": [{"text": "x", "kind": "f", "text": "y"}]}', "text"),  # below the walked levels
        (b'{"m": {"b": 1, "b": {}}, "n": 1}', "b"),
        (b'[{"z": [{"q": 1, "q": 1}]}]', "q"),
        (b'{"m": {' + b"".join(b'"k%d": %d, ' % (i, i) for i in range(12_000)) + b'"k3": 0}}', "k3"),  # past the walk
    ],
)
def test_a_key_given_twice_is_refused_at_any_depth(document: bytes, key: str, piece_bytes: int) -> None:
    with pytest.raises(DuplicateKey) as refused:
        loads_in_steps(document, piece_bytes)
    assert refused.value.key == key
    with pytest.raises(DuplicateKey):
        json.loads(document, object_pairs_hook=unique_members)


def test_a_body_of_tiny_members_costs_what_json_loads_costs() -> None:
    # Walked a member at a time, 1.8 million numbers took 3-4 s of CPU (36 MB of them, half a minute).
    document = b'{"items": [' + b"1," * 1_800_000 + b"1]}"
    started = time.thread_time()
    assert len(loads_in_steps(document)["items"]) == 1_800_001
    assert time.thread_time() - started < 1.0
