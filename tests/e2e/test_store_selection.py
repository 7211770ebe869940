"""Choosing the store by one setting: bad URLs and unreachable servers stop ``server run`` with one line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests import forked
from tests.support import free_port


def server_run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    return forked.run(
        [sys.executable, "-m", "powercontext", "server", "run", "--port", str(free_port()), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**base, **(env or {})},
    )


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgres://u@h/db", "unknown store URL scheme 'postgres'"),
        ("seekdb://relative/dir", "needs an absolute path"),
        ("oceanbase://u:secret@127.0.0.1:2881/db", "POWERCONTEXT_STORE_PASSWORD"),
        ("oceanbase://127.0.0.1:2881/db", "needs a user and a host"),
        # Unescaped, '#' would cut the path: another, empty store would open at "/srv/team ".
        ("sqlite:///srv/team #1/store.db", "cannot hold '#'"),
    ],
)
def test_a_bad_store_url_stops_the_server_with_one_line_naming_the_variable(url: str, says: str) -> None:
    result = server_run(env={"POWERCONTEXT_STORE": url})
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: POWERCONTEXT_STORE: ") and says in lines[0]
    assert "secret" not in result.stderr


def test_the_store_option_is_named_when_it_is_the_bad_one() -> None:
    result = server_run("--store", "nope:///x")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith("error: --store: unknown store URL scheme 'nope'")


def test_an_unreachable_oceanbase_server_stops_the_server_with_one_line() -> None:
    port = free_port()  # nothing listens there
    result = server_run(
        env={"POWERCONTEXT_STORE": f"oceanbase://root@127.0.0.1:{port}/pc", "POWERCONTEXT_STORE_PASSWORD": "hunter2"}
    )
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    # The URL is named with its user information masked (a bare user part may be a token: text/urls.py).
    assert len(errors) == 1 and errors[0].startswith(
        f"error: POWERCONTEXT_STORE: cannot connect to oceanbase://***@127.0.0.1:{port}/pc"
    )
    assert "Traceback" not in result.stderr
    assert "hunter2" not in result.stderr
