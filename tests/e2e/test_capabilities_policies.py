"""``GET /v1/capabilities`` states the rerank and expansion policies the Server was started with."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.chat_fixture import start_chat_server
from tests.conftest import live_server


def capabilities(base_url: str) -> dict[str, object]:
    response = httpx.get(base_url + "/v1/capabilities", timeout=10)
    assert response.status_code == 200
    body = response.json()
    assert isinstance(body, dict)
    return body


@pytest.mark.parametrize(
    ("settings", "rerank", "expansion"),
    [
        ({}, "off", "none"),
        ({"POWERCONTEXT_RERANK": "deterministic", "POWERCONTEXT_EXPANSION": "widen"}, "deterministic", "widen"),
    ],
)
def test_policies_without_a_model(tmp_path: Path, settings: dict[str, str], rerank: str, expansion: str) -> None:
    with live_server(tmp_path, settings) as live:
        body = capabilities(live.base_url)
    assert (body["rerank"], body["expansion"]) == (rerank, expansion)


def test_model_backed_policies(tmp_path: Path) -> None:
    with start_chat_server() as chat:
        settings = {
            "POWERCONTEXT_GENERATION": "openai-compatible",
            "POWERCONTEXT_GENERATION_BASE_URL": chat.base_url,
            "POWERCONTEXT_GENERATION_MODEL": "gen-model",
            "POWERCONTEXT_RERANK": "listwise",
            "POWERCONTEXT_EXPANSION": "model",
        }
        with live_server(tmp_path, settings) as live:
            body = capabilities(live.base_url)
        # Stating a policy costs no model call.
        assert chat.requests() == 0
    assert (body["rerank"], body["expansion"]) == ("listwise", "model")
