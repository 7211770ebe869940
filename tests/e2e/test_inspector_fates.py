"""The Inspector's "why" rows for a candidate of an expansion round the prepare did not retain, in headless Chromium.

A real uvicorn in this process with an injected expander (the Runtime's public seam): round 1 finds a new memory and
round 2 fails, so that memory's row must say which round found it and that the round was not retained.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright import sync_api as playwright_sync

from powercontext.store.sqlite import SqliteStore
from tests.conftest import StartInProcess
from tests.e2e.test_explain_code_rounds import FailingSecondRound
from tests.e2e.test_inspector import BROWSER_ARGS, CHROMIUM
from tests.support import artifact_id, strict_json


def test_why_row_names_the_round_that_was_not_retained(
    inprocess_server: StartInProcess, sqlite_store: SqliteStore
) -> None:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Debian's chromium is not installed at {CHROMIUM}: apt-get install chromium")
    live = inprocess_server(sqlite_store, expander=FailingSecondRound())
    sid = live.api.new_scope()
    for i in range(3):
        live.api.add(sid, f"ship cadence note {i} about the weekly cut", "fact")
    platform = artifact_id(live.api.add(sid, "the release train leaves on tuesdays from the platform branch", "fact"))
    with playwright_sync.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{live.base_url}/inspector#scope={sid}&q=ship%20cadence")
        page.wait_for_selector(f'#scope option[value="{sid}"]', state="attached")
        with page.expect_response(lambda r: r.url.endswith("/v1/context/explain")) as answer:
            page.click("#run")
        explained = strict_json(answer.value.body())
        row = page.locator(f'tr.candidate-row[data-identity="{sid} atomic-memory {platform}@1"]')
        row.wait_for()
        fate = row.locator("td.fate")
        texts = (row.get_attribute("data-fate"), fate.text_content(), fate.get_attribute("title") or "")
        shown = page.locator("tr.candidate-row").evaluate_all("rs => rs.map(r => r.dataset.fate)")
        browser.close()
    reported = next(c for c in explained["candidates"] if c["artifact_address"]["artifact"]["artifact_id"] == platform)
    assert reported["fate"]["outcome"] == "not_retained" and reported["fate"]["round"] == 1
    assert texts[0] == "not_retained" and texts[1] == "round 1 not retained"
    assert "abandoned" in texts[2] and "counts no omission" in texts[2]
    assert sorted(shown) == ["not_retained", "selected", "selected", "selected"]
