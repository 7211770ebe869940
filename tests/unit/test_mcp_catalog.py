"""The MCP catalog repeats the API contract's enums and bounds (it must import no pydantic); they must agree."""

from __future__ import annotations

from typing import get_args

from powercontext.contract.code import MAX_CODE_QUERY_LIMIT
from powercontext.contract.common import MemoryKind, SearchModePolicy
from powercontext.contract.families import MAX_FAMILY_SEARCH_LIMIT
from powercontext.contract.memory import AtomicMemorySearchRequest
from powercontext.mcp import catalog


def test_enums_and_bounds_match_the_contract() -> None:
    assert get_args(MemoryKind) == catalog.MEMORY_KINDS
    assert get_args(SearchModePolicy) == catalog.SEARCH_MODES
    limit = AtomicMemorySearchRequest.model_json_schema()["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"]) == (1, catalog.MEMORY_SEARCH_LIMIT)
    assert catalog.FAMILY_SEARCH_LIMIT == MAX_FAMILY_SEARCH_LIMIT
    assert catalog.CODE_QUERY_LIMIT == MAX_CODE_QUERY_LIMIT


def test_every_tool_maps_to_a_path_under_v1_with_encoded_segments() -> None:
    args = {"scope_id": "a/b c", "artifact_id": "am_1", "revision": 2, "query": "q", "text": "t", "kind": "fact"}
    args |= {"candidate_id": "mc_1", "decision": "reject", "source_id": "src/1", "cursor": "12&limit=1"}
    for tool in catalog.TOOLS:
        method, path, _ = tool.call({k: v for k, v in args.items() if k in tool.properties})
        assert method in ("GET", "POST") and path.startswith("/v1/")
        assert "a/b c" not in path and "src/1" not in path
        assert "&limit=1" not in path, "a query value is encoded"
