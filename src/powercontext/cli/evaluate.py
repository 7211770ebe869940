"""``powercontext eval run`` and ``eval compare``.

``eval run`` without ``--url`` starts a Server in this process on a fresh temporary store (the same
Runtime and HTTP routes as ``server run``, over an in-process transport) and configures it from the
``POWERCONTEXT_*`` environment, so rerank, expansion and embedding settings pass through unchanged.
"""

from __future__ import annotations

import os
import secrets
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from powercontext.cli.common import fail, parse_section
from powercontext.cli.terminal import say

if TYPE_CHECKING:
    from powercontext.client import PowerContextClient
    from powercontext.evaluation.runner import Mode, RunOutput, RunSettings
    from powercontext.evaluation.suite import Suite
    from powercontext.settings import Settings

eval_app = typer.Typer(no_args_is_help=True, help="Measure recall quality on a suite (docs/evaluation.md).")
# Never recorded in a report: anything that can hold a secret.
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "ACCESS_FILE")


def recorded_environment() -> dict[str, str]:
    """The ``POWERCONTEXT_*`` settings that shape a run, without secrets."""
    return {
        k: v
        for k, v in sorted(os.environ.items())
        if k.startswith("POWERCONTEXT_") and not any(m in k for m in _SECRET_MARKERS) and k != "POWERCONTEXT_URL"
    }


class _RichProgress:
    def __init__(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        from powercontext.cli.rich_terminal import TerminalConsole

        self.bar = Progress(
            TextColumn("{task.description:<8}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=TerminalConsole(stderr=True),  # stdout carries only the scores
            transient=False,
        )
        self.task: Any = None

    def start(self, phase: str, total: int) -> None:
        self.task = self.bar.add_task(phase, total=total)

    def advance(self) -> None:
        self.bar.advance(self.task)


async def _run_in_process(
    suite: Suite, settings: RunSettings, server_settings: Settings, progress: _RichProgress
) -> RunOutput:
    import dataclasses
    import tempfile

    import httpx

    from powercontext.client import PowerContextClient
    from powercontext.evaluation.runner import run_suite
    from powercontext.inference.config import EmbeddingConfig
    from powercontext.runtime import Runtime
    from powercontext.server.app import create_app

    with tempfile.TemporaryDirectory(prefix="powercontext-eval-") as tmp:
        server_settings = dataclasses.replace(server_settings, db_path=Path(tmp) / "eval.db")
        if settings.mode == "fts":
            server_settings = dataclasses.replace(server_settings, embeddings=EmbeddingConfig())
        runtime = Runtime.from_settings(server_settings)
        try:
            transport = httpx.ASGITransport(app=create_app(runtime, close_runtime=False))
            async with PowerContextClient("http://127.0.0.1", transport=transport, timeout=120.0) as client:
                return await run_suite(client, suite, settings, progress)
        finally:
            runtime.close()


async def _run_remote(url: str, suite: Suite, settings: RunSettings, progress: _RichProgress) -> RunOutput:
    from powercontext.client import PowerContextClient
    from powercontext.evaluation.runner import run_suite

    client: PowerContextClient
    async with PowerContextClient(url, token=os.environ.get("POWERCONTEXT_TOKEN") or None, timeout=120.0) as client:
        return await run_suite(client, suite, settings, progress)


@eval_app.command("run")
def eval_run(
    suite_dir: Annotated[Path, typer.Argument(help="Directory with memories.jsonl and queries.jsonl.")],
    out: Annotated[Path, typer.Option("--out", help="Directory for report.json and report.html.")],
    mode: Annotated[
        str, typer.Option(help="auto (the Server's default policy), fts (no vectors) or hybrid (needs a provider).")
    ] = "auto",
    max_bytes: Annotated[int, typer.Option(min=512, max=32768, help="Byte budget of every prepare.")] = 8000,
    section: Annotated[
        list[str] | None,
        typer.Option("--section", help="An explicit assembly section FAMILY=LIMIT (repeatable), as in prepare."),
    ] = None,
    k: Annotated[int, typer.Option(min=1, max=32, help="Rank cut-off of hit@k, recall@k and nDCG@k.")] = 8,
    url: Annotated[
        str | None,
        typer.Option("--url", help="Evaluate a running Server (into fresh Scopes) instead of a temporary store."),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option("--baseline", help="An earlier report.json: the page shows deltas and flipped queries."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the overall and per-category scores as JSON.")] = False,
) -> None:
    """Ingest a suite, prepare once per query with a Receipt, score it and explain every miss."""
    from powercontext.evaluation.runner import RunSettings
    from powercontext.evaluation.suite import SuiteError, load_suite

    if mode not in ("auto", "fts", "hybrid"):
        raise fail("--mode must be auto, fts or hybrid", 2)
    old_report = _read_baseline(baseline) if baseline is not None else None
    if out.exists() and not out.is_dir():
        raise fail(f"--out: {out} is a file; name a directory for report.json and report.html", 2)
    try:
        suite = load_suite(suite_dir)
    except (SuiteError, OSError) as exc:
        raise fail(f"invalid-suite: {exc}", 2) from None
    sections = tuple((str(s["family"]), int(str(s["limit"]))) for s in map(parse_section, section or []))
    prefix = "" if url is None else f"eval-{secrets.token_hex(4)}:"
    settings = RunSettings(cast("Mode", mode), max_bytes, sections, k, scope_prefix=prefix)
    server_settings = _in_process_settings() if url is None else None
    started_at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    start = time.perf_counter()
    output = _execute(url, suite, settings, server_settings)
    report = _build_report(suite, settings, output, suite_dir, url, started_at, time.perf_counter() - start)
    if baseline is not None and old_report is not None:
        from powercontext.evaluation.compare import compare_reports

        report["baseline"] = {
            "path": str(baseline),
            "comparison": compare_reports(old_report, report),
            "curves": old_report["overall"].get("curves"),
        }
    _write_reports(report, out)
    if as_json:
        from powercontext.cli.common import print_json

        print_json({"overall": report["overall"], "categories": report["categories"], "out": str(out)})
        return
    _print_summary(suite.name, report, k, out)


def _build_report(
    suite: Suite,
    settings: RunSettings,
    output: RunOutput,
    suite_dir: Path,
    url: str | None,
    started_at: str,
    duration_s: float,
) -> dict[str, Any]:
    from powercontext.evaluation.report import build_report

    target: dict[str, Any] = {"kind": "url", "url": url} if url else {"kind": "in-process", "store": "temporary sqlite"}
    target["command"] = settings.command(str(suite_dir), url)
    return build_report(
        suite,
        settings,
        output,
        target=target,
        environment=recorded_environment(),
        started_at=started_at,
        duration_s=duration_s,
    )


def _in_process_settings() -> Settings:
    """The in-process Server reads POWERCONTEXT_* like ``server run``: a bad value is one line and exit code 2."""
    from powercontext.settings import Settings

    try:
        return Settings.from_env(db="unused")
    except ValueError as exc:
        say(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def _execute(url: str | None, suite: Suite, settings: RunSettings, server_settings: Settings | None) -> RunOutput:
    """Run the suite against ``url``, or against an in-process Server on a temporary store, with a progress bar."""
    import asyncio

    from powercontext.client import PowerContextError
    from powercontext.evaluation.runner import EvalRunError
    from powercontext.inference.errors import InferenceError

    progress = _RichProgress()
    try:
        with progress.bar:
            if url is not None:
                return asyncio.run(_run_remote(url, suite, settings, progress))
            assert server_settings is not None  # read by the caller whenever there is no --url
            return asyncio.run(_run_in_process(suite, settings, server_settings, progress))
    except (EvalRunError, InferenceError) as exc:
        raise fail(str(exc)) from None
    except PowerContextError as exc:
        raise fail(f"{exc.code}: {exc.message}") from None


def _write_reports(report: dict[str, Any], out: Path) -> None:
    from powercontext.evaluation.html import render_html
    from powercontext.evaluation.report import write_json

    out.mkdir(parents=True, exist_ok=True)
    write_json(report, out / "report.json")
    (out / "report.html").write_text(render_html(report), encoding="utf-8")


def _print_summary(suite_name: str, report: dict[str, Any], k: int, out: Path) -> None:
    overall = report["overall"]
    say(
        f"{suite_name}: hit@{k} {overall['hit_at_k']:.3f}  MRR {overall['mrr']:.3f}  recall@{k} "
        f"{overall['recall_at_k']:.3f}  outdated instead {overall['outdated_instead']:.3f}  "
        f"abstain bytes {overall['abstain_mean_bytes']:.0f}  p50 {overall['latency_ms']['p50']:.1f} ms"
    )
    for name, group in report["categories"].items():
        if group["scored"]:
            figures = f"hit@{k} {group['hit_at_k']:.3f}  MRR {group['mrr']:.3f}"
        else:
            figures = f"mean bytes injected {group['abstain_mean_bytes']:.0f}"
        say(f"  {name:<12} {figures}  n={group['queries']}")
    say(f"wrote {out / 'report.json'} and {out / 'report.html'}")


def _read_baseline(path: Path) -> dict[str, Any]:
    from powercontext.evaluation.report import read_report

    try:
        return read_report(path)
    except (OSError, ValueError) as exc:
        raise fail(f"invalid-report: --baseline: {exc}", 2) from None


@eval_app.command("compare")
def eval_compare(
    before: Annotated[Path, typer.Argument(help="The baseline report.json.")],
    after: Annotated[Path, typer.Argument(help="The report.json to compare with it.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="The JSON to write (default: compare.json beside AFTER).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON instead of a table.")] = False,
) -> None:
    """Per-category differences (after − before) and the queries whose hit@k flipped; printed and written."""
    import json

    from powercontext.evaluation.compare import compare_reports, format_comparison
    from powercontext.evaluation.report import read_report

    try:
        a, b = read_report(before), read_report(after)
    except OSError as exc:
        raise fail(f"invalid-report: {exc.filename or before}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise fail(f"invalid-report: {exc}") from None
    comparison = compare_reports(a, b)
    if as_json:
        from powercontext.cli.common import print_json

        print_json(comparison)
    else:
        say(format_comparison(comparison))
    target = out or after.parent / "compare.json"
    try:
        target.write_text(json.dumps(comparison, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise fail(f"cannot write {target}: {exc.strerror}") from None
    say(f"wrote {target}", err=as_json)


@eval_app.command("extraction")
def eval_extraction(
    suite_dir: Annotated[Path, typer.Argument(help="Directory with conversations.jsonl (docs/evaluation.md).")],
    out: Annotated[Path | None, typer.Option("--out", help="Write the report JSON here.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Score extraction: each conversation's turns are captured and extracted by an in-process Server on a temporary
    store (POWERCONTEXT_GENERATION* choose the model; without one only explicit statements are extracted)."""
    import asyncio
    import json

    from powercontext.evaluation.extraction import load_conversations

    try:
        conversations = load_conversations(suite_dir)
    except (OSError, ValueError) as exc:
        raise fail(str(exc)) from None
    report = asyncio.run(_extraction_in_process(conversations, _in_process_settings()))
    if out is not None:
        out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if as_json:
        say(json.dumps(report, indent=2))
        return
    say(
        f"extraction: recall {report['recall']:.2f}, precision {report['precision']:.2f}, "
        f"outdated still active {report['outdated_active']}, secrets stored {report['secrets_stored']} "
        f"({report['conversations']} conversations, extractor {report['extractor']})"
    )


async def _extraction_in_process(conversations: list[Any], server_settings: Settings) -> dict[str, Any]:
    import dataclasses
    import tempfile

    import httpx

    from powercontext.client import PowerContextClient
    from powercontext.evaluation.extraction import run_conversation, summarize
    from powercontext.runtime import Runtime
    from powercontext.server.app import create_app

    with tempfile.TemporaryDirectory(prefix="powercontext-eval-") as tmp:
        server_settings = dataclasses.replace(
            server_settings, db_path=Path(tmp) / "eval.db", store=None, extraction_review="none"
        )
        runtime = Runtime.from_settings(server_settings)
        worker = runtime.extraction
        if worker is None:
            raise fail("this store cannot hold Sources")

        def extract() -> None:  # the worker's turns, run here until nothing due is left
            while worker.run_once():
                pass

        try:
            transport = httpx.ASGITransport(app=create_app(runtime, close_runtime=False))
            async with PowerContextClient("http://127.0.0.1", transport=transport, timeout=120.0) as client:
                results = [
                    await run_conversation(client, f"eval-extraction-{c.id}-{secrets.token_hex(3)}", c, extract)
                    for c in conversations
                ]
        finally:
            runtime.close()
    extractor = "model" if worker.extractor.model_backed else "explicit"
    return {"extractor": extractor, **summarize(results)}
