"""Large bodies are parsed in steps; the result, and every refusal, is what ``json.loads`` gives."""

from __future__ import annotations

import json

import pytest

from powercontext.server.stepped_json import loads_in_steps

DOCUMENTS = [
    b'{"items": [{"text": "\\u0007\\ud83d\\ude00", "tags": ["a", "b"]}, {"n": 1.5e3, "x": null}], "k": true}',
    b'  {"a": [ 1 , {"b": [2, [3, {"c": {}}]]} ] , "e": "\\u00e9", "f": []}\n',
    '{"caf\u00e9": ["\u00fcber"]}'.encode("utf-16"),  # json.loads detects the encoding of bytes
    b"[]",
    b"{}",
    b'"a string"',
    b"-12.5",
    b'[{"x": NaN}, Infinity]',
    b'{"a": 1, "a": 2}',  # the last duplicate wins, as in json.loads
]
BROKEN = [b'{"a": [1, 2,]}', b'{"a": 1} x', b"[1 2]", b'{"a" 1}', b"", b"{", b'{"a": [', b"{a: 1}", b"[1,]"]


@pytest.mark.parametrize("document", DOCUMENTS)
def test_the_result_is_what_json_loads_gives(document: bytes) -> None:
    assert repr(loads_in_steps(document)) == repr(json.loads(document))


@pytest.mark.parametrize("document", BROKEN)
def test_a_broken_document_is_refused_as_json_loads_refuses_it(document: bytes) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(document)
    with pytest.raises(json.JSONDecodeError):
        loads_in_steps(document)
