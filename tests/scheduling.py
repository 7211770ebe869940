"""The order the suite runs in: its longest files first, its timed tests last and together.

The README's test command runs ``pytest -n 2`` (pytest-xdist) with ``--dist loadfile`` (a file's tests stay in
one process, so its module-scoped servers start once) and ``--no-loadscope-reorder`` (files are handed out in
collection order, not by their number of tests). Handing the few files that take a minute or more out first is
the classic longest-job-first rule: the many short files then fill the gaps, and neither worker is left with
a long file at the end while the other idles. The list comes from ``--durations`` on the 2-core CI machine;
a file missing from it only runs in its usual place, so a stale list costs time, never a test.

The tests marked ``timed`` assert wall-clock bounds and run while the other worker waits; they are one work
unit (``TimedTogetherScheduling``), handed out last, so the other worker waits once rather than once per test.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadFileScheduling

# Longest first: the seconds each file took (setup + call + teardown, --durations) in a two-worker run of the
# whole suite on the 2-core machine at load ~4 (other jobs running). The three seekdb-server files are kept apart.
HEAVY_FILES = (
    "tests/e2e/test_openapi_fuzz.py",  # 66 s: a 60 s time budget
    "tests/faults/test_kill_during_batches.py",  # ~95 s: ten SIGKILLs and restarts per store (seekdb ~5 s each)
    "tests/e2e/test_families_cli.py",  # 43 s; no engine: the seekdb warm-up runs meanwhile (seekdb_support)
    "tests/e2e/test_seekdb_native_fulltext_server.py",  # 55 s
    "tests/e2e/test_seekdb_server.py",  # 34 s: an engine server, two Servers, a kill
    "tests/e2e/test_eval_cli.py",  # 37 s
    "tests/e2e/test_host_clis_opencode_pi.py",  # 35 s
    "tests/e2e/test_seekdb_two_servers.py",  # 32 s
    "tests/e2e/test_cli.py",  # 29 s
    "tests/e2e/test_vector_recall.py",  # 27 s
    "tests/unit/test_inference_local.py",  # 47 s before one BLAS thread and one embedding per route; ~20 s
    "tests/e2e/test_inspector.py",  # 20 s
    "tests/e2e/test_cli_conventions.py",  # 20 s
    "tests/e2e/test_import_resume.py",  # 32 s with 10,000 lines; ~16 s with 5,000
)


TIMED_MARK = "timed"
TIMED_UNIT = "timed tests"  # the one work unit every timed test belongs to under xdist


def is_timed(item: pytest.Item) -> bool:
    return item.get_closest_marker(TIMED_MARK) is not None


def order_items(items: list[pytest.Item]) -> None:
    """Reorder ``items`` in place: the files of ``HEAVY_FILES`` in that order, then the rest as collected, and
    every timed test last (under xdist they form one work unit: ``TimedTogetherScheduling``)."""
    rank = {path: index for index, path in enumerate(HEAVY_FILES)}
    position = {id(item): index for index, item in enumerate(items)}

    def key(item: pytest.Item) -> tuple[bool, int, int]:
        path = item.nodeid.split("::", 1)[0]
        return (is_timed(item), rank.get(path, len(HEAVY_FILES)), position[id(item)])

    items.sort(key=key)


# -- timed tests under xdist -------------------------------------------------------------------------------


def _timed_ids_path(testrunuid: str) -> Path:
    return Path(tempfile.gettempdir()) / f"powercontext-timed-{testrunuid}.txt"


def record_timed_ids(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker: write the timed tests' ids where the controller's scheduler reads them (the
    controller collects nothing itself). Every worker writes the same list; the replace is atomic."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return
    path = _timed_ids_path(workerinput["testrunuid"])
    partial = path.with_suffix(f".{os.getpid()}")
    partial.write_text("\n".join(item.nodeid for item in items if is_timed(item)), encoding="utf-8")
    os.replace(partial, path)


def share_run_id(config: pytest.Config) -> None:
    """On the controller: fix the run's id before the workers start, so both sides name the same file."""
    if getattr(config, "workerinput", None) is None and getattr(config.option, "testrunuid", "") is None:
        config.option.testrunuid = uuid.uuid4().hex


class TimedTogetherScheduling(LoadFileScheduling):
    """``--dist loadfile``, except that every timed test is in one work unit, ``TIMED_UNIT``.

    A timed test runs while the other worker waits (``alone_when_timed``). Spread over their files, each one
    first waited for the other worker's current test to end: 40 s of idle workers per run. Together, and held
    from the first to the last (``alone_when_timed`` keeps the lock while the next test is timed too), they wait
    once. ``order_items`` puts them last, so the unit is handed out last.
    """

    def __init__(self, config: pytest.Config, log: Producer | None = None) -> None:
        super().__init__(config, log)
        self._timed_ids: set[str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if self._timed_ids is None:
            path = _timed_ids_path(self.config.option.testrunuid)
            self._timed_ids = set(path.read_text(encoding="utf-8").splitlines()) if path.exists() else set()
            path.unlink(missing_ok=True)
        return TIMED_UNIT if nodeid in self._timed_ids else super()._split_scope(nodeid)


class _Locks:
    """This worker's hold on the run's two lock files, kept across consecutive timed tests."""

    held: tuple[IO[bytes], IO[bytes]] | None = None


@contextmanager
def alone_when_timed(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Under pytest-xdist, a test marked ``timed`` runs while no other worker runs a test.

    A timed test asserts a wall-clock bound (a deadline met, ``--help`` under 0.5 s), so it must not share the
    two cores with another worker's test. Each test holds a lock file shared by the run's workers: a timed test
    exclusively, any other shared. A timed test first closes a turnstile that every test passes before it
    locks, so the other worker cannot keep the lock shared from one test to the next: it finishes its current
    test and waits. A timed test followed by another keeps both locks for it. Outside xdist nothing runs beside
    a test, and nothing is locked.
    """
    basetemp = item.config.option.basetemp
    if not os.environ.get("PYTEST_XDIST_WORKER") or not basetemp:
        yield
        return
    timed = is_timed(item)
    if not (timed and _Locks.held is not None):  # else the previous timed test kept them for this one
        _release()
        run_dir = Path(basetemp).parent
        # Closed by _release, after this test or after the last of a run of timed tests.
        turnstile = open(run_dir / "timed-turnstile.lock", "a+b")  # noqa: SIM115
        lock = open(run_dir / "timed.lock", "a+b")  # noqa: SIM115
        _Locks.held = (turnstile, lock)
        fcntl.flock(turnstile, fcntl.LOCK_EX if timed else fcntl.LOCK_SH)
        if not timed:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        fcntl.flock(lock, fcntl.LOCK_EX if timed else fcntl.LOCK_SH)
    try:
        yield
    finally:
        if not (timed and nextitem is not None and is_timed(nextitem)):
            _release()


def _release() -> None:
    if _Locks.held is None:
        return
    turnstile, lock = _Locks.held
    _Locks.held = None
    for handle in (lock, turnstile):
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()
