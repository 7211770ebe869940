"""The evaluation page a person reads: curves over k, a log-scale latency chart whose percentile labels
sit clear of the bars, bytes as bytes, each miss beside what was injected instead, and a baseline diff.
Checked in headless Chromium (layout) and by parsing (content)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright import sync_api as playwright_sync

from tests.ci import unavailable
from tests.e2e.test_eval_cli import run_cli, run_eval, write_suite
from tests.e2e.test_inspector import BROWSER_ARGS, CHROMIUM
from tests.support import doc_image


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Path, dict[str, Any]]:
    """A default run (the baseline) and a run with a tiny budget compared against it."""
    base = tmp_path_factory.mktemp("eval-report")
    suite = write_suite(base / "suite")
    baseline = run_eval(suite, base / "baseline")
    after = run_eval(suite, base / "small", "--max-bytes", "512", "--baseline", str(base / "baseline" / "report.json"))
    return base / "baseline", baseline, base / "small", after


@pytest.fixture(scope="module")
def browser() -> Iterator[playwright_sync.Browser]:
    if shutil.which("chromium") is None and not Path(CHROMIUM).exists():
        unavailable("needs chromium (.ci/run installs it)")
    with playwright_sync.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        yield launched
        launched.close()


def test_report_json_has_curves_p95_and_the_baseline(runs: tuple[Path, dict[str, Any], Path, dict[str, Any]]) -> None:
    _, baseline, _, after = runs
    curves = baseline["overall"]["curves"]
    assert curves["k"] == [float(k) for k in range(1, 17)]
    scored = [q for q in baseline["queries"] if "hit_at_k" in q]
    # hit@1 by hand: the share of scored queries whose first injected memory is expected
    by_hand = sum(1 for q in scored if q["selected"][:1] and q["selected"][0] in q["expected"]) / len(scored)
    assert curves["hit_at"][0] == round(by_hand, 4)
    assert curves["hit_at"][7] == baseline["overall"]["hit_at_k"]  # k = 8 is the run's --k
    assert curves["recall_at"][7] == baseline["overall"]["recall_at_k"]
    assert curves["hit_at"] == sorted(curves["hit_at"]) and curves["recall_at"] == sorted(curves["recall_at"])
    latency = baseline["overall"]["latency_ms"]
    assert latency["p50"] <= latency["p95"] <= latency["p99"]
    assert [f["id"] for f in after["baseline"]["comparison"]["flipped"]["lost"]] == ["q-bytes"]
    assert after["texts"]["b-exp"] == "The lantern key is kept in the vault."


def test_baseline_that_is_not_a_report_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "not.json").write_text("{}", encoding="utf-8")
    suite = write_suite(tmp_path / "suite")
    result = run_cli("eval", "run", str(suite), "--out", str(tmp_path / "o"), "--baseline", str(tmp_path / "not.json"))
    assert result.returncode == 2 and "invalid-report: --baseline" in result.stderr
    assert not (tmp_path / "o").exists(), "nothing ran"


def test_the_page_in_chromium(
    browser: playwright_sync.Browser, runs: tuple[Path, dict[str, Any], Path, dict[str, Any]]
) -> None:
    _, _, small_dir, after = runs
    html = (small_dir / "report.html").read_text("utf-8")
    assert "<script" not in html.lower() and "http://" not in html and "https://" not in html
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto((small_dir / "report.html").as_uri())
    assert all(url.startswith("file://") for url in requests)

    # Two curves (this run) and two (the baseline), 16 points each.
    curves = page.locator("polyline.curve")
    assert curves.count() == 4
    for i in range(4):
        assert len((curves.nth(i).get_attribute("points") or "").split()) == 16

    # Percentile labels: all three, none overlapping another label or any bar.
    labels = page.locator("text.percentile-label")
    assert [labels.nth(i).text_content().split()[0] for i in range(labels.count())] == ["p50", "p95", "p99"]
    boxes = [labels.nth(i).bounding_box() for i in range(labels.count())]
    bars = [
        b
        for b in (page.locator("rect.bin").nth(i).bounding_box() for i in range(page.locator("rect.bin").count()))
        if b and b["height"] > 0
    ]
    assert bars

    def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
        return (
            a["x"] < b["x"] + b["width"]
            and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"]
            and b["y"] < a["y"] + a["height"]
        )

    for i, box in enumerate(boxes):
        assert box is not None
        assert not any(overlap(box, bar) for bar in bars), f"label {i} overlaps a bar"
        assert not any(overlap(box, other) for j, other in enumerate(boxes) if j != i and other), "labels overlap"
    assert "ms (log scale)" in page.text_content("body")

    # Bytes read as bytes.
    body = page.text_content("body") or ""
    assert " KiB" in body or " B" in body
    assert not any(cell.endswith(".900") for cell in page.locator("td").all_text_contents())

    # The lost query: its missed memory's text, under what was injected instead.
    row = page.locator("tr[data-query='q-bytes']")
    assert "The lantern key is kept in the vault." in (row.locator("li.miss").text_content() or "")
    assert "byte_budget" in (row.locator("li.miss").text_content() or "")
    assert "lantern lantern" in (row.locator(".injected").text_content() or "")

    # The baseline: deltas and the flipped query.
    assert "Against the baseline" in body
    flipped = page.locator("table.flipped tr.lost")
    assert flipped.count() == 1 and "q-bytes" in (flipped.text_content() or "")
    keyword = page.locator("table.baseline tr", has_text="keyword").first
    assert "1.000 → 0.500 -0.500" in (keyword.text_content() or "")
    page.screenshot(path=doc_image("eval-report.png"), full_page=True)
    page.close()
    assert after["baseline"]["path"].endswith("report.json")
    json.dumps(after)  # the report stays plain JSON


def test_compare_prints_json(runs: tuple[Path, dict[str, Any], Path, dict[str, Any]], tmp_path: Path) -> None:
    baseline_dir, _, small_dir, _ = runs
    args = [str(baseline_dir / "report.json"), str(small_dir / "report.json"), "--out", str(tmp_path / "c.json")]
    result = run_cli("eval", "compare", *args, "--json")
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert [f["id"] for f in printed["flipped"]["lost"]] == ["q-bytes"]
    assert printed == json.loads((tmp_path / "c.json").read_text("utf-8"))
