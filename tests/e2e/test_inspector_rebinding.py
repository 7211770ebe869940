"""DNS rebinding in a real browser: a page whose name resolves to 127.0.0.1 gets nothing from a default Server,
while the Inspector, opened from the Server's own address, works with no setting and no token.

Headless Chromium (Debian's ``chromium``) with ``--host-resolver-rules`` mapping ``rebound.example`` to 127.0.0.1:
the second half of a rebinding attack, after the attacker's DNS answer changed. The attacker's page itself is
served by Playwright (the first half, when the name still pointed at the attacker). Chromium's own Private
Network Access checks would block that page's requests to a loopback address by themselves; they are turned
off here, as a browser without them (Firefox, Safari) behaves, so that what is tested is the Server's refusal.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from playwright import sync_api as playwright_sync

from tests.conftest import LiveServer, live_server

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
REBOUND = "rebound.example"
SCOPE = "web:rebinding"
BROWSER_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1",
    "--disable-features=BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights,"
    "PrivateNetworkAccessRespectPreflightResults,LocalNetworkAccessChecks",
]
ATTACK = """async () => {
  const out = {};
  const list = await fetch("/v1/scopes");
  out.list = [list.status, (await list.json()).error.code];
  const planted = await fetch("/v1/scopes/web:rebinding/atomic-memory", {
    method: "POST",
    headers: {"content-type": "application/json"},
    body: JSON.stringify({text: "planted by a rebound page", kind: "fact"}),
  });
  out.plant = [planted.status, (await planted.json()).error.code];
  out.metrics = (await fetch("/metrics")).status;
  out.mcp = (await fetch("/mcp", {method: "POST", body: "{}"})).status;
  return out;
}"""


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Debian's chromium is not installed at {CHROMIUM}: apt-get install chromium")
    with live_server(tmp_path_factory.mktemp("rebinding")) as live, httpx.Client(base_url=live.base_url) as http:
        assert http.post("/v1/scopes", json={"scope_id": SCOPE, "title": "Web"}).status_code == 201
        memory = {"text": "Deploy rollbacks are automatic after a failed canary.", "kind": "decision"}
        assert http.post(f"/v1/scopes/{SCOPE}/atomic-memory", json=memory).status_code == 201
        yield live


@pytest.fixture
def page(local: LiveServer) -> Iterator[Any]:
    with playwright_sync.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        context = browser.new_context()
        yield context.new_page()
        context.close()
        browser.close()


def test_the_inspector_works_from_the_servers_own_address_with_no_setting(local: LiveServer, page: Any) -> None:
    page.goto(f"{local.base_url}/inspector#scope={SCOPE}&q=deploy")
    page.wait_for_selector(f'#scope option[value="{SCOPE}"]', state="attached")
    with page.expect_response(lambda r: r.url.endswith("/v1/context/explain")) as answer:
        page.click("#run")
    assert answer.value.status == 200
    assert answer.value.request.header_value("origin") == local.base_url  # a same-origin POST carries Origin
    page.wait_for_selector("#result:not([hidden])")
    assert "Deploy rollbacks are automatic" in (page.text_content("#content") or "")
    assert page.is_hidden("#token-panel")


def test_a_rebound_page_reads_and_writes_nothing(local: LiveServer, page: Any) -> None:
    port = urlsplit(local.base_url).port
    origin = f"http://{REBOUND}:{port}"
    page.route(f"{origin}/attack", lambda route: route.fulfill(content_type="text/html", body="<p>cats</p>"))
    page.goto(f"{origin}/attack")
    seen = page.evaluate(ATTACK)
    assert seen == {
        "list": [421, "misdirected-request"],
        "plant": [421, "misdirected-request"],
        "metrics": 421,
        "mcp": 421,
    }
    assert page.goto(f"{origin}/inspector").status == 421
    hits = httpx.post(f"{local.base_url}/v1/scopes/{SCOPE}/atomic-memory/search", json={"query": "planted"}, timeout=30)
    assert hits.status_code == 200 and hits.json()["hits"] == []
