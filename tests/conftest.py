"""Fixtures: a real server subprocess, and an in-process uvicorn server built from real parts.

* ``server`` (session scope) starts ``powercontext.server.run.serve`` in a child interpreter on a free
  loopback port, with stderr captured to a file so tests can read the server's log lines. Tests
  isolate themselves with fresh uuid Scope ids, so one server is shared safely.
* ``inprocess_server`` is a factory: ``Runtime(store, receipt_assembler=...)`` + ``create_app`` +
  ``uvicorn.Server`` in a thread. It is the seam for injecting a failing receipt assembler or a
  counting Store wrapper; nothing of the code under test is monkeypatched.
"""

from __future__ import annotations

import os

# Before NumPy loads (the imports below load it), as the Server does (server/run.py), and inherited by every
# Server and CLI process a test starts. OpenBLAS's default of one thread per core spins idle threads while
# the two xdist workers already keep both cores busy: the numpy route's 201-sentence embedding measured
# 26 s of CPU with the default and 4.8 s with one thread on the loaded 2-core machine.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# An unset POWERCONTEXT_EMBEDDINGS means the local model whenever it is installed, and '.[dev]' installs it. Tests
# that do not choose a provider run without one, as before: deterministic full-text ranking and no model load
# per Server. Test support (tests/forked.py, ``_start_server``) sets the same in the environments it builds; a
# test of the default itself passes POWERCONTEXT_EMBEDDINGS="" (blank means unset).
os.environ.setdefault("POWERCONTEXT_EMBEDDINGS", "none")

import logging
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from powercontext.runtime import Runtime
from powercontext.server.app import create_app
from powercontext.store.base import Store
from powercontext.store.sqlite import SqliteStore
from tests import forked
from tests.ci import under_ci
from tests.scheduling import TimedTogetherScheduling, alone_when_timed, order_items, record_timed_ids, share_run_id
from tests.seekdb_support import (
    may_use_seekdb,
    new_engine_dir,
    require_seekdb,
    share_one_template,
    warm_up_in_background,
)
from tests.support import REQUEST_ID_HEADER, TLS, Api, free_port, stop_process, wait_until

REPO_ROOT = Path(__file__).resolve().parent.parent

SERVE_CODE = (
    "from powercontext.server.run import serve; from powercontext.settings import Settings; "
    "serve(Settings.from_env(db={db!r}, host='127.0.0.1', port={port}, store={store!r}))"
)


def pytest_configure(config: pytest.Config) -> None:
    share_run_id(config)
    if getattr(config, "workerinput", None) is None:  # the controller, before any worker starts
        config.add_cleanup(share_one_template())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    order_items(items)
    record_timed_ids(config, items)
    if not config.option.collectonly and may_use_seekdb(items):
        warm_up_in_background()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> TimedTogetherScheduling | None:
    return TimedTogetherScheduling(config, log) if config.getvalue("dist") == "loadfile" else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[object]:
    with alone_when_timed(item, nextitem):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[object]:
    """Under CI (``tests/ci.py``) a skipped test is a failure, whatever skipped it: a ``skipif`` mark, a
    ``pytest.skip`` in a fixture or a test. An expected failure (xfail) is not a skip."""
    report = yield
    assert isinstance(report, pytest.TestReport)
    if report.skipped and under_ci() and not hasattr(report, "wasxfail"):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI, which counts as a failure (untested is unsupported): {reason}"
    return report


# -- the server subprocess ---------------------------------------------------------------------

ServerProcess = subprocess.Popen[bytes] | forked.ForkedProcess


@dataclass
class LiveServer:
    base_url: str
    log_path: Path
    db_path: Path
    process: ServerProcess

    def log_text(self) -> str:
        """The server's stderr so far, after a barrier request has been logged.

        Access-log lines are written after the response is sent, so a fresh request is made and the
        log is read once its request id appears: every earlier request's line is then on disk.
        """
        r = httpx.get(self.base_url + "/health/live", timeout=10, verify=TLS)
        request_id = r.headers[REQUEST_ID_HEADER]
        assert wait_until(lambda: request_id in self.log_path.read_text("utf-8", errors="replace")), (
            "barrier request never reached the server log"
        )
        return self.log_path.read_text("utf-8", errors="replace")


def _start_server(
    db_path: Path,
    log_path: Path,
    settings: dict[str, str] | None = None,
    store: str | None = None,
    fresh_interpreter: bool = False,
) -> LiveServer:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env["POWERCONTEXT_LOG_LEVEL"] = "info"
    env["POWERCONTEXT_EMBEDDINGS"] = "none"  # unless ``settings`` names a provider: see the top of this file
    env.update(settings or {})
    process: ServerProcess
    if fresh_interpreter:
        with open(log_path, "wb") as log_file:
            process = subprocess.Popen(
                [sys.executable, "-c", SERVE_CODE.format(db=str(db_path), port=port, store=store)],
                stdout=subprocess.DEVNULL,
                stderr=log_file,
                cwd=str(REPO_ROOT),
                env=env,
            )
    else:
        process = forked.start_server(db=str(db_path), port=port, store=store, stderr=log_path, env=env, cwd=REPO_ROOT)
    base_url = f"http://127.0.0.1:{port}"
    probe = httpx.Client(timeout=1, verify=TLS)  # one client for the whole poll

    def ready() -> bool:
        if process.poll() is not None:
            return True
        try:
            return probe.get(base_url + "/health/ready").status_code == 200
        except httpx.TransportError:
            return False

    with probe:
        wait_until(ready, timeout=60 if store else 30, interval=0.05)
    if process.poll() is not None:
        raise RuntimeError(f"server exited with {process.returncode}:\n{log_path.read_text()}")
    return LiveServer(base_url, log_path, db_path, process)


def _stop_server(server: LiveServer) -> None:
    stop_process(server.process)


@contextmanager
def live_server(
    base: Path,
    settings: dict[str, str] | None = None,
    log_name: str = "server-stderr.log",
    store: str | None = None,
    fresh_interpreter: bool = False,
) -> Iterator[LiveServer]:
    """A server subprocess on the database in ``base`` (``POWERCONTEXT_*`` from ``settings``), stopped on exit.

    ``store`` (a store URL) puts its data there instead of the SQLite file in ``base``. The process is forked
    from an interpreter that has imported the Server (``tests/forked.py``); ``fresh_interpreter`` starts a new
    interpreter instead, for tests of what a Server does at start-up."""
    live = _start_server(base / "powercontext.db", base / log_name, settings, store, fresh_interpreter)
    try:
        yield live
    finally:
        _stop_server(live)


def code_roots_for_tests(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Lets a server index the test's temporary directories (every ``tmp_path`` lies under the base) and this
    repository's sources (the server's current directory)."""
    roots = (str(tmp_path_factory.getbasetemp()), str(REPO_ROOT / "src"))
    return {"POWERCONTEXT_CODE_ROOTS": os.pathsep.join(roots)}


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("server"), code_roots_for_tests(tmp_path_factory)) as live:
        yield live


@pytest.fixture(scope="session")
def seekdb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server subprocess on its own embedded seekdb directory (never the test process's engine)."""
    require_seekdb()
    base = tmp_path_factory.mktemp("seekdb-server")
    with live_server(base, store=f"seekdb://{new_engine_dir(base)}") as live:
        yield live


@pytest.fixture(params=["sqlite", "seekdb"])
def backend_server(request: pytest.FixtureRequest) -> LiveServer:
    """The shared server on each store backend in turn: a test using it runs once per backend."""
    name = "server" if request.param == "sqlite" else "seekdb_server"
    live: LiveServer = request.getfixturevalue(name)
    return live


@pytest.fixture
def api(server: LiveServer) -> Iterator[Api]:
    client = Api(server.base_url)
    try:
        yield client
    finally:
        client.close()


# -- the in-process server ---------------------------------------------------------------------


class CountingStore:
    """Delegates every store method (``Store`` and ``FamilyStore``) to a real store and counts calls by name.

    A proxy rather than a list of signatures: it cannot fall behind the protocols, and
    ``isinstance(CountingStore(s), FamilyStore)`` holds exactly when it holds for ``s``.
    Subclasses override a method by defining it (looked up before ``__getattr__``).
    """

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)
        if not callable(target) or name in ("ready", "close"):
            return target

        def counted(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.calls[name] += 1
            return target(*args, **kwargs)

        return counted

    def snapshot(self) -> Counter[str]:
        with self._lock:
            return Counter(self.calls)

    @property
    def search_text_calls(self) -> int:
        return self.snapshot()["search_text"]


@dataclass
class InProcessServer:
    base_url: str
    runtime: Runtime
    server: uvicorn.Server
    thread: threading.Thread
    api: Api = field(init=False)

    def __post_init__(self) -> None:
        self.api = Api(self.base_url)

    def stop(self) -> None:
        self.api.close()
        self.server.should_exit = True
        self.thread.join(timeout=15)
        assert not self.thread.is_alive(), "in-process server did not shut down"


StartInProcess = Callable[..., InProcessServer]


@pytest.fixture
def inprocess_server() -> Iterator[StartInProcess]:
    started: list[InProcessServer] = []

    def start(store: Store, **runtime_kwargs: Any) -> InProcessServer:
        runtime = Runtime(store, **runtime_kwargs)
        app = create_app(runtime)
        port = free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
        thread.start()
        if not wait_until(lambda: server.started or not thread.is_alive(), timeout=20):
            raise RuntimeError("in-process server did not start")
        if not server.started:
            raise RuntimeError("in-process server thread died during startup")
        live = InProcessServer(f"http://127.0.0.1:{port}", runtime, server, thread)
        started.append(live)
        return live

    yield start
    for live in started:
        live.stop()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> SqliteStore:
    """A real SQLite store in a fresh file (closed by the in-process server's lifespan, or GC)."""
    return SqliteStore(tmp_path / "inproc.db")


class _ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def receipt_log() -> Iterator[list[logging.LogRecord]]:
    """Every record logged to ``powercontext.receipt`` while the test runs."""
    logger = logging.getLogger("powercontext.receipt")
    handler = _ListHandler()
    logger.addHandler(handler)
    try:
        yield handler.records
    finally:
        logger.removeHandler(handler)
