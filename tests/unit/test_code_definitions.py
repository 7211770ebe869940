"""Which chunk text counts as defining a queried identifier, and the reorder that puts those first."""

from __future__ import annotations

import pytest

from powercontext.search.code_definitions import defines, definitions_first, query_identifiers


@pytest.mark.parametrize(
    "text",
    [
        "def parse_http_response(raw: bytes) -> Response:\n",
        "    async def parse_http_response(self):\n",
        "class parse_http_response:\n",
        "@functools.cache\ndef parse_http_response():\n",
        "export function parse_http_response(raw) {\n",
        "export default async function parse_http_response() {}\n",
        "const parse_http_response = (raw) => raw;\n",
        "pub fn parse_http_response(raw: &[u8]) -> Response {\n",
        "func (p *Parser) parse_http_response(raw []byte) Response {\n",
        "type parse_http_response = (raw: string) => Response;\n",
        "parse_http_response: Final = make_parser()\n",
    ],
)
def test_definitions_are_recognised(text: str) -> None:
    assert defines(text, ["parse_http_response"])


@pytest.mark.parametrize(
    "text",
    [
        "result = parse_http_response(raw)\n",
        "from parser import parse_http_response\n",
        "    assert parse_http_response(b'') == expected\n",
        "def test_parse_http_response_handles_gzip():\n",
        "if parse_http_response == other:\n",
        "# def parse_http_response is in parser.py\n",
        "  const parse_http_response = await client.fetchJson('/ledger');\n",
    ],
)
def test_uses_are_not_definitions(text: str) -> None:
    assert not defines(text, ["parse_http_response"])


def test_query_identifiers_keep_order_and_skip_short_words() -> None:
    assert query_identifiers("where is parseHttpResponse or id or run_all, parseHttpResponse") == [
        "where",
        "parseHttpResponse",
        "run_all",
    ]


def test_definitions_move_first_and_each_group_keeps_its_order() -> None:
    texts = [
        "parse_http_response(a)\nparse_http_response(b)\n",
        "x = parse_http_response(c)\n",
        "def parse_http_response(raw):\n    return raw\n",
        "def unrelated():\n    pass\n",
    ]
    items = ["test-many-uses", "caller", "definition", "other"]
    assert definitions_first(items, texts, "parse_http_response") == ["definition", "test-many-uses", "caller", "other"]
    assert definitions_first(items, texts, "nothing defined here") == items
    assert definitions_first(items, texts, "") == items
