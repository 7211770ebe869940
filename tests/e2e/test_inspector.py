"""The Context Inspector in headless Chromium (Debian's ``chromium``), against a real Server with an access file.

The page is driven with Playwright's Python API pointed at the system browser: nothing is downloaded."""

from __future__ import annotations

import hashlib
import json
import shutil
import statistics
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from playwright import sync_api as playwright_sync
from playwright.sync_api import expect

from tests import forked
from tests.conftest import LiveServer, live_server
from tests.support import doc_image, strict_json

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ADMIN, VIEWER = "inspector-admin-4Kd", "inspector-viewer-8Qs"
WEB, SHARED = "proj:web", "shared:notes"
MARKUP = '<img src=x onerror="window.__pwned=1"> deploy markup note <script>window.__pwned=2</script>'
BROWSER_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass
class Seeded:
    live: LiveServer
    admin: httpx.Client
    forgettable: str  # the artifact id of a memory the test forgets after preparing
    why: dict[str, str]  # the "why SQLite?" case's artifact ids by role


def _client(live: LiveServer, token: str) -> httpx.Client:
    return httpx.Client(base_url=live.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def _ok(response: httpx.Response) -> dict[str, Any]:
    assert response.is_success, response.text
    return dict(response.json())


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Debian's chromium is not installed at {CHROMIUM}: apt-get install chromium")
    base = tmp_path_factory.mktemp("inspector")
    grants = {
        "principals": [
            {"name": "admin", "token_sha256": _digest(ADMIN), "read": ["*"], "write": ["*"]},
            {"name": "viewer", "token_sha256": _digest(VIEWER), "read": [WEB], "write": []},
        ]
    }
    (base / "access.json").write_text(json.dumps(grants), encoding="utf-8")
    with live_server(base, {"POWERCONTEXT_ACCESS_FILE": str(base / "access.json")}) as live:
        admin = _client(live, ADMIN)
        _ok(admin.post("/v1/scopes", json={"scope_id": SHARED, "title": "Shared notes"}))
        _ok(admin.post("/v1/scopes", json={"scope_id": WEB, "title": "Web", "context_references": [SHARED]}))
        texts = [
            "Payments deploy uses a blue/green rollout; decided after the March outage.",
            "Deploy freeze on Fridays for the payments service.",
            MARKUP,
        ]
        for text in texts:
            _ok(admin.post(f"/v1/scopes/{WEB}/atomic-memory", json={"text": text, "kind": "decision"}))
        forgettable = _ok(
            admin.post(
                f"/v1/scopes/{WEB}/atomic-memory",
                json={"text": "Deploy keys rotate every 90 days.", "kind": "constraint"},
            )
        )["artifact_address"]["artifact"]["artifact_id"]
        topic = {"title": "Deploy pipeline", "body": "The deploy pipeline has three stages: build, canary, fleet."}
        _ok(admin.post(f"/v1/scopes/{WEB}/topic-memory", json=topic))
        _ok(
            admin.post(
                f"/v1/scopes/{SHARED}/atomic-memory",
                json={"text": "The shared deploy checklist lives in the runbook.", "kind": "fact"},
            )
        )
        tree = base / "tree"
        tree.mkdir()
        (tree / "deploy.py").write_text("def deploy_payments(stage):\n    return stage\n", encoding="utf-8")
        indexed = forked.run(
            [sys.executable, "-m", "powercontext", "code", "index", str(tree), "-s", WEB, "--db", str(live.db_path)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert indexed.returncode == 0, indexed.stderr
        yield Seeded(live, admin, forgettable, _seed_why(admin))
        admin.close()


@pytest.fixture(scope="module")
def browser(seeded: Seeded) -> Iterator[Any]:
    with playwright_sync.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        yield launched
        launched.close()


@dataclass
class Watched:
    page: Any
    requests: list[str]
    dialogs: list[str]


@pytest.fixture
def page(browser: Any) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1200, "height": 1400})
    opened = context.new_page()
    watched = Watched(opened, [], [])
    opened.on("request", lambda r: watched.requests.append(r.url))
    opened.on("dialog", lambda d: (watched.dialogs.append(d.message), d.dismiss()))
    yield watched
    context.close()


def _sign_in(page: Any, token: str) -> None:
    page.wait_for_selector("#token-panel:not([hidden])")
    page.fill("#token", token)
    page.click("#token-use")


def _explain_in_page(page: Any, button: str = "#run") -> dict[str, Any]:
    """The page's explain answer (its ``prepared`` is what an agent gets)."""
    with page.expect_response(lambda r: r.url.endswith("/v1/context/explain")) as answer:
        page.click(button)
    page.wait_for_selector("#result:not([hidden])")
    return strict_json(answer.value.body())


def _prepare_in_page(page: Any, button: str = "#run") -> dict[str, Any]:
    prepared: dict[str, Any] = _explain_in_page(page, button)["prepared"]
    return prepared


def _identity(item: dict[str, Any]) -> str:
    if item["family"] == "code":
        c = item["code_evidence"]
        return f"code {c['fingerprint']} {c['path']}:{c['start_line']}-{c['end_line']} {c['snippet_sha256']}"
    a = item["artifact_address"]
    r = a["artifact"]
    return f"{a['scope_id']} {r['family']} {r['artifact_id']}@{r['revision']}"


def _expand(page: Any, identity: str) -> Any:
    row = page.locator(f'tr.selected-row[data-identity="{identity}"]')
    row.locator("button.expand").click()
    detail = row.locator("xpath=following-sibling::tr[1]")
    detail.locator("pre.body, .read-error").first.wait_for()
    return detail


def test_page_shows_the_receipt_rows_and_exact_revisions(seeded: Seeded, page: Watched) -> None:
    p = page.page
    p.goto(f"{seeded.live.base_url}/inspector#scope={WEB}&q=deploy")
    _sign_in(p, ADMIN)
    expect(p.locator("#scope option")).to_have_count(3)
    assert p.input_value("#scope") == WEB, "the Scope from the address is pre-selected"
    assert p.input_value("#query") == "deploy"
    p.check("#code-a")
    body = _prepare_in_page(p)
    receipt = body["receipt"]
    shown = p.locator("tr.selected-row").evaluate_all("rows => rows.map(r => r.dataset.identity)")
    assert shown == [_identity(item) for item in receipt["selected"]]
    assert {item["family"] for item in receipt["selected"]} >= {"atomic-memory", "topic-memory", "code"}
    assert p.text_content("#content") == body["content"]
    assert p.text_content("#budget-text") == f"{body['content_bytes']} of 8000 bytes"
    assert receipt["receipt_id"] in p.text_content("#receipt-ids")
    assert p.locator("#stage-chart rect").count() == len(receipt["stages"])
    # The why table has the code range too, injected, with its own rank.
    code_rows = p.locator('tr.candidate-row[data-identity^="code "]')
    assert code_rows.count() >= 1 and code_rows.first.get_attribute("data-fate") == "selected"

    # Expanding a memory row reads its exact revision, even after it was forgotten.
    forgotten = next(
        i
        for i in receipt["selected"]
        if i.get("artifact_address", {}).get("artifact", {}).get("artifact_id") == seeded.forgettable
    )
    _ok(seeded.admin.post(f"/v1/scopes/{WEB}/atomic-memory/{seeded.forgettable}/lifecycle", json={"action": "forget"}))
    detail = _expand(p, _identity(forgotten))
    assert detail.locator("pre.body").text_content() == "Deploy keys rotate every 90 days."
    assert "forgotten" in detail.text_content()
    code = next(i for i in receipt["selected"] if i["family"] == "code")
    assert "def deploy_payments" in _expand(p, _identity(code)).locator("pre.body").text_content()

    # Markup in a memory is text: shown verbatim, nothing runs, nothing is fetched.
    markup = next(i for i in receipt["selected"] if i["family"] == "atomic-memory" and "markup" in _read(seeded, i))
    assert _expand(p, _identity(markup)).locator("pre.body").text_content() == MARKUP
    # The prepared content carries it framing-safe (``<`` as a JSON escape), shown as the text it is.
    assert "\\u003cimg src=x onerror=" in p.text_content("#content"), "markup in the content shows as text"
    assert p.evaluate("window.__pwned") is None
    assert page.dialogs == []
    assert not [u for u in page.requests if u.rstrip("/").endswith("/x")]
    p.screenshot(path=doc_image("inspector-main.png"), full_page=True)

    # Another principal, without read on the referenced Scope, sees the 403 on that row.
    p.fill("#token", VIEWER)
    p.click("#token-use")
    expect(p.locator("#scope option")).to_have_count(1)
    shared = next(i for i in receipt["selected"] if i.get("artifact_address", {}).get("scope_id") == SHARED)
    error = _expand(p, _identity(shared)).locator(".read-error").text_content()
    assert error.startswith("403 scope-forbidden")
    # The token was never put in storage or the address.
    assert p.evaluate("localStorage.length + sessionStorage.length") == 0
    assert VIEWER not in p.url and ADMIN not in p.url


def _read(seeded: Seeded, item: dict[str, Any]) -> str:
    a = item["artifact_address"]
    r = a["artifact"]
    path = f"/v1/scopes/{a['scope_id']}/artifacts/{r['family']}/{r['artifact_id']}/revisions/{r['revision']}"
    view = _ok(seeded.admin.get(path))
    return str(view.get("text", view.get("body", "")))


def _injected(explained: dict[str, Any]) -> list[str]:
    chosen = [c for c in explained["candidates"] if c["fate"]["outcome"] == "selected"]
    return [_identity(c) for c in sorted(chosen, key=lambda c: c["fate"]["position"])]


def _diff_ids(p: Any, group: str) -> list[str]:
    return list(p.locator(f"#diff-{group} li").evaluate_all("items => items.map(i => i.dataset.identity)"))


def test_compare_diffs_what_a_smaller_budget_dropped(seeded: Seeded, page: Watched) -> None:
    p = page.page
    p.goto(f"{seeded.live.base_url}/inspector#scope={WEB}&q=deploy%20payments")
    _sign_in(p, ADMIN)
    expect(p.locator("#scope option")).to_have_count(3)
    p.fill("#max-bytes-b", "700")
    answers: list[dict[str, Any]] = []
    p.on("response", lambda r: answers.append(strict_json(r.body())) if r.url.endswith("/explain") else None)
    p.click("#compare")
    p.wait_for_selector("#comparison:not([hidden])")
    # Response events reach this handler while Playwright is waiting, possibly after the page has already
    # drawn the comparison: give the second one time to arrive.
    for _ in range(50):
        if len(answers) == 2:
            break
        p.wait_for_timeout(100)
    assert len(answers) == 2
    answers.sort(key=lambda answer: -int(answer["prepared"]["receipt"]["requested_max_bytes"]))
    a_ids, b_ids = _injected(answers[0]), _injected(answers[1])
    dropped = [i for i in a_ids if i not in b_ids]
    assert dropped, "the smaller budget should drop at least one identity"
    assert _diff_ids(p, "lost") == dropped
    assert _diff_ids(p, "gained") == [i for i in b_ids if i not in a_ids]
    # Each lost item says what happened to it in the other run.
    assert all("now " in t for t in p.locator("#diff-lost li").all_text_contents())
    p.screenshot(path=doc_image("inspector-compare.png"), full_page=True)


def test_diff_before_and_after_a_write(seeded: Seeded, page: Watched) -> None:
    p = page.page
    p.goto(f"{seeded.live.base_url}/inspector#scope={WEB}&q=rollback%20drill&run=1")
    _sign_in(p, ADMIN)
    p.wait_for_selector("#result:not([hidden])")
    p.click("#pin")
    written = _ok(
        seeded.admin.post(
            f"/v1/scopes/{WEB}/atomic-memory", json={"text": "Rollback drill every quarter.", "kind": "fact"}
        )
    )
    with p.expect_response(lambda r: r.url.endswith("/v1/context/explain")):
        p.keyboard.press("Control+Enter")
    p.wait_for_selector("#diff-gained li")
    gained = _diff_ids(p, "gained")
    address = written["artifact_address"]
    assert gained == [f"{WEB} atomic-memory {address['artifact']['artifact_id']}@1"]
    assert _diff_ids(p, "lost") == []


WHY = "proj:why"


def _seed_why(admin: httpx.Client) -> dict[str, str]:
    """The issue's case: why SQLite? A settlement topic sits among the candidates; one expected fact shares no term."""
    _ok(admin.post("/v1/scopes", json={"scope_id": WHY, "title": "Why SQLite"}))
    texts = {
        "choice": "We chose SQLite for the default store: one file to back up, no server to run.",
        "wal": "SQLite runs in WAL mode so readers never wait for the writer.",
        "unrelated": "Lunch orders go out at eleven.",
        "expected": "The embedded database keeps everything in a single file on disk.",
    }
    ids = {
        name: _ok(admin.post(f"/v1/scopes/{WHY}/atomic-memory", json={"text": text, "kind": "fact"}))[
            "artifact_address"
        ]["artifact"]["artifact_id"]
        for name, text in texts.items()
    }
    topic = {"title": "Settlement", "body": "Nightly settlement: we choose to batch it after midnight."}
    ids["topic"] = _ok(admin.post(f"/v1/scopes/{WHY}/topic-memory", json=topic))["artifact_address"]["artifact"][
        "artifact_id"
    ]
    return ids


def _no_horizontal_overflow(p: Any) -> bool:
    return bool(p.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


def test_why_rows_expected_box_items_and_permalink(seeded: Seeded, browser: Any) -> None:
    ids = seeded.why
    context = browser.new_context(viewport={"width": 1400, "height": 1200})
    p = context.new_page()
    p.goto(
        f"{seeded.live.base_url}/inspector#scope={WHY}&q=Why%20did%20we%20choose%20SQLite%3F&expect={ids['expected']}"
    )
    _sign_in(p, ADMIN)
    expect(p.locator("#scope option")).to_have_count(3)
    explained = _explain_in_page(p)
    candidates = explained["candidates"]
    rows = p.locator("tr.candidate-row")
    expect(rows).to_have_count(len(candidates))
    # One row per candidate, injected ones first in injection order, each with the fate the Server reported.
    shown = rows.evaluate_all("rs => rs.map(r => [r.dataset.identity, r.dataset.fate])")
    injected = _injected(explained)
    assert (
        [i for i, fate in shown if fate == "selected"]
        == injected
        == [_identity(i) for i in explained["prepared"]["receipt"]["selected"]]
    )
    fates = {_identity(c): c["fate"]["reason"] or "selected" for c in candidates}
    assert {i: f for i, f in shown} == fates
    # The SQLite rows show their text with the matched words highlighted, and their matched terms.
    choice = p.locator(f'tr.candidate-row[data-identity="{WHY} atomic-memory {ids["choice"]}@1"]')
    choice.locator("td.preview mark").first.wait_for()
    assert "SQLite" in choice.locator("td.preview mark").all_text_contents()
    assert choice.locator(".term").all_text_contents() == ["sqlite"]  # "we" is a function word
    assert "We chose SQLite for the default store" in choice.locator("td.preview").text_content()
    link = choice.locator("a").get_attribute("href")
    assert link == f"/v1/scopes/{quote(WHY, safe='')}/artifacts/atomic-memory/{ids['choice']}/revisions/1"
    # The unrelated topic is a candidate because it shares a query term; its row says which.
    topic = p.locator(f'tr.candidate-row[data-identity="{WHY} topic-memory {ids["topic"]}@1"]')
    assert topic.locator(".term").all_text_contents() == ["choos"]
    # The expected fact shares no term with the query: the box says it was not ranked, and why.
    box = p.locator(f'#expected-list li[data-id="{ids["expected"]}"]')
    assert box.get_attribute("data-where") == "not_found"
    assert "shares no query term" in box.text_content()
    # A family with no content here is not reported as an omission.
    assert "experience" in p.text_content("#no-candidates")
    assert "not_retrieved" not in p.text_content("#result")
    # The injected content, item by item, and raw on a toggle.
    expect(p.locator("#injected li.injected-item")).to_have_count(len(injected))
    assert p.locator("#injected pre.body").first.text_content() in explained["prepared"]["content"]
    p.click("#raw-toggle")
    assert p.is_visible("#content") and p.text_content("#content") == explained["prepared"]["content"]
    p.click("#raw-toggle")
    assert _no_horizontal_overflow(p)
    p.screenshot(path=doc_image("inspector-why.png"), full_page=True)

    # The permalink is the address now; opened afresh it runs the request with no click.
    permalink = p.get_attribute("#permalink", "href")
    assert permalink.endswith("&run=1") and f"expect={ids['expected']}" in permalink
    assert p.evaluate("location.pathname + location.hash") == permalink
    fresh = context.new_page()
    with fresh.expect_response(lambda r: r.url.endswith("/v1/context/explain")) as answer:
        fresh.goto(seeded.live.base_url + permalink)
        _sign_in(fresh, ADMIN)
    reopened = strict_json(answer.value.body())
    fresh.wait_for_selector("tr.candidate-row")
    assert _injected(reopened) == injected
    assert fresh.input_value("#expected") == ids["expected"]
    context.close()


@pytest.mark.parametrize("width", [375, 1400])
def test_page_fits_narrow_and_wide_screens(seeded: Seeded, browser: Any, width: int) -> None:
    scheme = "dark" if width == 375 else "light"
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    p = context.new_page()
    p.goto(f"{seeded.live.base_url}/inspector#scope={WEB}&q=deploy%20payments&run=1")
    _sign_in(p, ADMIN)
    p.wait_for_selector("tr.candidate-row td.preview mark")
    p.fill("#max-bytes-b", "700")
    p.click("#compare")
    p.wait_for_selector("#comparison:not([hidden])")
    assert _no_horizontal_overflow(p)
    background = p.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    assert (background == "rgb(21, 23, 26)") == (scheme == "dark"), background
    if width == 375:
        p.locator("#comparison").scroll_into_view_if_needed()
        p.screenshot(path=doc_image("inspector-narrow-dark.png"), full_page=False)
    context.close()


def test_dropped_receipt_shows_the_banner_and_the_content(seeded: Seeded, page: Watched) -> None:
    """A Receipt over its byte bound is dropped whole (fail-open); the page says so and still shows the content."""
    p = page.page
    prepared = {"schema": "powercontext.prepared-context.v1", "status": "ready", "content": "x", "content_bytes": 1}
    explained = {"prepared": prepared, "query_terms": ["deploy"], "families": [], "candidates": [], "expected": []}
    p.route(
        "**/v1/context/explain",
        lambda route: route.fulfill(status=200, content_type="application/json", body=json.dumps(explained)),
    )
    p.goto(f"{seeded.live.base_url}/inspector#scope={WEB}&q=deploy")
    _sign_in(p, ADMIN)
    expect(p.locator("#scope option")).to_have_count(3)
    p.click("#run")
    p.wait_for_selector("#receipt-dropped")
    assert p.text_content("#content") == "x"
    assert p.locator("tr.selected-row").count() == 0


def test_page_headers_and_asset_size(seeded: Seeded) -> None:
    page = httpx.get(f"{seeded.live.base_url}/inspector")
    assert page.status_code == 200
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy and "unsafe-inline" not in policy
    total = len(page.content)
    for asset in ("inspector.js", "inspector.css"):
        r = httpx.get(f"{seeded.live.base_url}/inspector/{asset}")
        assert r.status_code == 200 and r.headers["content-security-policy"] == policy
        total += len(r.content)
    assert total <= 80 * 1024, f"assets total {total} bytes"
    assert b"<script>" not in page.content, "no inline script"
    # Only the three assets are served; anything else under /inspector is an ordinary (guarded) unknown path.
    assert httpx.get(f"{seeded.live.base_url}/inspector/..%2F__init__.py").status_code in (401, 404)


def test_inspector_off_removes_the_route(tmp_path: Path) -> None:
    with live_server(tmp_path, {"POWERCONTEXT_INSPECTOR": "off"}) as live:
        assert httpx.get(f"{live.base_url}/inspector").status_code == 404
        assert httpx.get(f"{live.base_url}/inspector/inspector.js").status_code == 404


@pytest.mark.timed
def test_26_item_receipt_renders_within_100_ms(seeded: Seeded, page: Watched) -> None:
    admin = seeded.admin
    ids = [f"perf:{i}" for i in range(8)]
    for sid in reversed(ids):
        refs = ids[1:] if sid == ids[0] else []
        _ok(admin.post("/v1/scopes", json={"scope_id": sid, "title": sid, "context_references": refs}))
        entries = [{"key": "language", "value": "Python"}, {"key": "note", "value": "perfword settles nightly"}]
        _ok(admin.put(f"/v1/scopes/{sid}/profile", json={"entries": entries}))
    head = ids[0]
    for i in range(8):
        _ok(admin.post(f"/v1/scopes/{head}/atomic-memory", json={"text": f"perfword memory {i}", "kind": "fact"}))
        _ok(admin.post(f"/v1/scopes/{head}/topic-memory", json={"title": f"perfword {i}", "body": f"perfword {i}."}))
    for i in range(2):
        proposal = {"situation": f"perfword case {i}", "what_worked": "replay", "what_to_avoid": "hand edits"}
        candidate = _ok(admin.post(f"/v1/scopes/{head}/experience/candidates", json=proposal))
        review = f"/v1/scopes/{head}/experience/candidates/{candidate['candidate_id']}/review"
        _ok(admin.post(review, json={"decision": "approve"}))
    p = page.page
    p.goto(f"{seeded.live.base_url}/inspector#scope={head}&q=perfword&max_bytes=32768")
    _sign_in(p, ADMIN)
    expect(p.locator("#scope option")).to_have_count(11)
    p.fill("#sections-a", "memory=8, topic-memory=8, profile=8, experience=2")
    body = _prepare_in_page(p)
    assert len(body["receipt"]["selected"]) == 26
    assert p.locator("tr.selected-row").count() == 26
    # One render on a machine running the rest of the suite can be slowed by a neighbour; the median of five
    # renders of the same Receipt is the figure the target is about.
    renders = [float(p.evaluate("document.body.dataset.renderMs"))]
    for _ in range(4):
        p.evaluate("delete document.body.dataset.renderMs")
        _prepare_in_page(p)
        p.wait_for_function("document.body.dataset.renderMs !== undefined")
        renders.append(float(p.evaluate("document.body.dataset.renderMs")))
    print("renders of a 26-item Receipt (ms):", ", ".join(f"{r:.1f}" for r in renders))
    assert statistics.median(renders) <= 100


def _inspect(*args: str, url: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "POWERCONTEXT_URL": url}
    if token:
        env["POWERCONTEXT_TOKEN"] = token
    return forked.run(
        [sys.executable, "-m", "powercontext", "inspect", *args, "--no-browser"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def test_cli_inspect_prints_a_prefilled_address(seeded: Seeded) -> None:
    url = seeded.live.base_url
    done = _inspect("-s", WEB, "-q", "why deploy?", url=url, token=ADMIN)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{url}/inspector#scope=proj%3Aweb&q=why%20deploy%3F&max_bytes=8000&run=1"
    as_json = _inspect("-s", WEB, "-q", "why deploy?", "--json", url=url, token=ADMIN)
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == {"url": done.stdout.strip()}
    # Without a token the page asks for one: the address is printed unchecked.
    unsigned = _inspect("-s", WEB, "-q", "why deploy?", url=url)
    assert unsigned.returncode == 0, unsigned.stderr
    assert unsigned.stdout.strip() == done.stdout.strip()


def test_cli_inspect_refuses_a_scope_the_server_lacks_and_a_server_that_is_down(seeded: Seeded) -> None:
    misspelt = _inspect("-s", "proj:wbe", "-q", "why deploy?", url=seeded.live.base_url, token=ADMIN)
    assert misspelt.returncode == 3, misspelt.stderr
    assert misspelt.stdout == ""
    assert "scope-not-found" in misspelt.stderr and "proj:web" in misspelt.stderr
    down = _inspect("-s", WEB, "-q", "why deploy?", url="http://127.0.0.1:9")
    assert down.returncode == 5 and down.stdout == ""
    assert "server-unreachable" in down.stderr


# -- QA findings: a permalink for a Scope that is not there, bidi and tag characters, 405s, max_bytes ----------

# Bidi embedding/override/isolate controls, LRM and the Arabic letter mark, and a Unicode tag character.
LIVE = "\u202e\u202c\u2066\u2069\u200e\u061c\U000e0041"
BIDI = "canary bidi \u202eevil\u202c text \u2066isolate\u2069 mark\u200e\u061c tag\U000e0041end"
INERT = "canary bidi \\u202eevil\\u202c text \\u2066isolate\\u2069 mark\\u200e\\u061c tag\\udb40\\udc41end"


def _explain_bodies(p: Any) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    p.on("request", lambda r: sent.append(json.loads(r.post_data)) if r.url.endswith("/v1/context/explain") else None)
    return sent


def test_permalink_for_a_misspelt_scope_names_it_and_runs_nothing_else(seeded: Seeded, page: Watched) -> None:
    p = page.page
    sent = _explain_bodies(p)
    asked = "#scope=proj%3Awbe&q=deploy&max_bytes=8000&run=1"
    p.goto(f"{seeded.live.base_url}/inspector{asked}")
    _sign_in(p, ADMIN)
    error = p.locator("#request-error")
    expect(error).to_be_visible()
    said = error.text_content()
    assert "proj:wbe" in said and "404 scope-not-found" in said, said
    assert "did you mean proj:web?" in said, said
    assert [body["scope_id"] for body in sent] == ["proj:wbe"], "only the asked Scope was explained"
    assert p.is_hidden("#result")
    assert p.input_value("#scope") == "", "no other Scope was put in its place"
    assert p.evaluate("location.hash") == asked, "the address still names the Scope asked for"


def test_bidi_and_tag_characters_show_as_escapes_as_the_agent_gets_them(seeded: Seeded, page: Watched) -> None:
    _ok(seeded.admin.post(f"/v1/scopes/{WEB}/atomic-memory", json={"text": BIDI, "kind": "fact"}))
    p = page.page
    p.goto(f"{seeded.live.base_url}/inspector#scope={WEB}&q=canary%20bidi")
    _sign_in(p, ADMIN)
    expect(p.locator(f'#scope option[value="{WEB}"]')).to_have_count(1)
    explained = _explain_in_page(p)
    assert "\\u202e" in explained["prepared"]["content"], "the agent gets the control escaped"
    bidi = next(c for c in explained["candidates"] if "bidi" in c["matched_terms"])
    row = p.locator(f'tr.candidate-row[data-identity="{_identity(bidi)}"]')
    preview = row.locator("td.preview")
    preview.locator("mark").first.wait_for()
    assert INERT in preview.text_content()
    injected = p.locator("#injected pre.body").all_text_contents()
    assert INERT in injected
    selected = p.locator(f'tr.selected-row[data-identity="{_identity(bidi)}"]')
    selected.locator("button.expand").click()
    body = selected.locator("xpath=following-sibling::tr[1]").locator("pre.body")
    body.wait_for()
    assert body.text_content() == INERT
    assert p.text_content("#content") == explained["prepared"]["content"]
    shown = p.text_content("#result")
    assert not any(c in shown for c in LIVE), "no bidi or tag character is live on the page"


@pytest.mark.parametrize(
    ("method", "path"), [("HEAD", "/inspector"), ("POST", "/inspector"), ("POST", "/inspector/inspector.js")]
)
def test_inspector_routes_answer_405_with_allow_get(seeded: Seeded, method: str, path: str) -> None:
    answer = httpx.request(method, f"{seeded.live.base_url}{path}")
    assert answer.status_code == 405
    assert answer.headers["allow"] == "GET"
    if method != "HEAD":
        assert answer.json()["error"]["code"] == "method-not-allowed"


def test_permalink_max_bytes_not_a_number_says_what_it_must_be(seeded: Seeded, page: Watched) -> None:
    p = page.page
    sent = _explain_bodies(p)
    p.goto(f"{seeded.live.base_url}/inspector#scope={WEB}&q=deploy&max_bytes=abc&run=1")
    _sign_in(p, ADMIN)
    error = p.locator("#request-error")
    expect(error).to_be_visible()
    assert error.text_content() == "max_bytes must be a whole number from 512 to 32768"
    assert sent == [], "nothing was sent"
    assert p.is_hidden("#result")
