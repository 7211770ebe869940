"""The order the suite runs in: its longest files first, so that two worker processes end together.

The README's test command runs ``pytest -n 2`` (pytest-xdist) with ``--dist loadfile`` (a file's tests stay in
one process, so its module-scoped servers start once) and ``--no-loadscope-reorder`` (files are handed out in
collection order, not by their number of tests). Handing the few files that take a minute or more out first is
the classic longest-job-first rule: the many short files then fill the gaps, and neither worker is left with
a long file at the end while the other idles. The list comes from ``--durations`` on the 2-core CI machine;
a file missing from it only runs in its usual place, so a stale list costs time, never a test.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

# Longest first: the seconds each file took (setup + call + teardown, --durations) in a two-worker run of the
# whole suite on the 2-core machine at load ~4 (other jobs running). The three seekdb-server files are kept apart.
HEAVY_FILES = (
    "tests/e2e/test_openapi_fuzz.py",  # 66 s: a 60 s time budget
    "tests/e2e/test_seekdb_native_fulltext_server.py",  # 55 s
    "tests/e2e/test_families_cli.py",  # 43 s
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


def heavy_files_first(items: list[pytest.Item]) -> None:
    """Reorder ``items`` in place: the files of ``HEAVY_FILES`` in that order, then the rest as collected."""
    rank = {path: index for index, path in enumerate(HEAVY_FILES)}
    position = {id(item): index for index, item in enumerate(items)}

    def key(item: pytest.Item) -> tuple[int, int]:
        path = item.nodeid.split("::", 1)[0]
        return (rank.get(path, len(HEAVY_FILES)), position[id(item)])

    items.sort(key=key)


TIMED_MARK = "timed"


@contextmanager
def alone_when_timed(item: pytest.Item) -> Iterator[None]:
    """Under pytest-xdist, a test marked ``timed`` runs while no other worker runs a test.

    A timed test asserts a wall-clock bound (a deadline met, ``--help`` under 0.5 s), so it must not share the
    two cores with another worker's test. Each test holds a lock file shared by the run's workers: a timed test
    exclusively, any other shared. A timed test first closes a turnstile that every test passes before it
    locks, so the other worker cannot keep the lock shared from one test to the next: it finishes its current
    test and waits. Outside xdist nothing runs beside a test, and nothing is locked.
    """
    basetemp = item.config.option.basetemp
    if not os.environ.get("PYTEST_XDIST_WORKER") or not basetemp:
        yield
        return
    timed = item.get_closest_marker(TIMED_MARK) is not None
    run_dir = Path(basetemp).parent
    with open(run_dir / "timed-turnstile.lock", "a+b") as turnstile, open(run_dir / "timed.lock", "a+b") as lock:
        fcntl.flock(turnstile, fcntl.LOCK_EX if timed else fcntl.LOCK_SH)
        if not timed:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        fcntl.flock(lock, fcntl.LOCK_EX if timed else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            fcntl.flock(turnstile, fcntl.LOCK_UN)
