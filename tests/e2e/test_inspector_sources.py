"""The Inspector's review inbox and lineage, in headless Chromium against a real Server that reviews every
extracted write: a captured ``remember:`` waits in the inbox, is approved from the page, and the explained
memory then names the Source it came from (host, session, time)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright import sync_api as playwright_sync
from playwright.sync_api import expect

from tests.conftest import LiveServer, live_server
from tests.support import TLS, wait_until

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
BROWSER_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
SCOPE = "inspector-review"


@pytest.fixture(scope="module")
def reviewing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Debian's chromium is not installed at {CHROMIUM}: apt-get install chromium")
    base = tmp_path_factory.mktemp("inspector-review")
    with live_server(base, {"POWERCONTEXT_EXTRACTION_REVIEW": "all"}) as live:
        yield live


def test_approve_from_the_inbox_then_see_the_source_of_the_injected_memory(reviewing: LiveServer) -> None:
    http = httpx.Client(base_url=reviewing.base_url, timeout=30, verify=TLS)
    assert http.post("/v1/scopes", json={"scope_id": SCOPE, "title": "review"}).status_code == 201
    origin = {"host": "claude-code", "session_id": "sess-42"}
    body = {"kind": "prompt", "content": "remember: deploys are on Tuesdays", "origin": origin}
    source_id = http.post(f"/v1/scopes/{SCOPE}/sources", json=body).json()["source_id"]

    def waiting() -> list[Any]:
        return list(http.get(f"/v1/scopes/{SCOPE}/memory-candidates").json()["items"])

    assert wait_until(lambda: len(waiting()) == 1, timeout=20)
    with playwright_sync.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        page = browser.new_page()
        page.goto(f"{reviewing.base_url}/inspector#scope={SCOPE}&q=when%20are%20deploys")
        row = page.locator("tr.review-row")
        expect(row).to_have_count(1)
        expect(row).to_contain_text("deploys are on Tuesdays")
        expect(row).to_contain_text(source_id)
        row.locator("button.approve").click()
        expect(page.locator("#review-summary")).to_contain_text("0 extracted write(s) waiting")
        page.click("#run")
        page.wait_for_selector("#result:not([hidden])")
        note = page.locator("#why .source-ref")
        expect(note).to_have_count(1)
        expect(note).to_contain_text(f"from prompt {source_id} · claude-code · session sess-42")
        browser.close()
    memories = http.get(f"/v1/scopes/{SCOPE}/atomic-memory").json()["items"]
    assert [m["text"] for m in memories] == ["deploys are on Tuesdays"]
    http.close()
