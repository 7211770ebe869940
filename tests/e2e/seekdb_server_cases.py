"""The multi-Server cases of test_seekdb_two_servers.py against a seekdb *server* (``oceanbase://``).

Not collected on its own (no ``test_`` prefix): ``test_seekdb_server.py`` runs this module with pytest
inside a network namespace it creates, because the seekdb server binds every interface.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import LiveServer, live_server
from tests.e2e.test_extraction_resilience import (
    killed_mid_extraction_leaves_the_source_to_the_next_server,
    two_servers_extract_each_source_once,
)
from tests.e2e.test_seekdb_two_servers import (  # the same cases, run here with the fixtures below
    kill_during_batch_leaves_all_or_nothing,
    test_compare_and_set_across_servers_has_exactly_one_winner,
    test_concurrent_writers_on_two_servers_lose_nothing,
    test_writes_through_one_server_are_read_searched_and_prepared_by_the_other,
    writer_lock_probe,
)
from tests.seekdb_server import PORT, seekdb_server

__all__ = [
    "test_compare_and_set_across_servers_has_exactly_one_winner",
    "test_concurrent_writers_on_two_servers_lose_nothing",
    "test_writes_through_one_server_are_read_searched_and_prepared_by_the_other",
]


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One seekdb server for the module: its ``oceanbase://`` URL and a directory for Server logs."""
    base: Path = tmp_path_factory.mktemp("seekdb-server")
    with seekdb_server(base / "engine") as url:
        yield url, base


@pytest.fixture(scope="module")
def two_servers(server_url: tuple[str, Path]) -> Iterator[tuple[LiveServer, LiveServer]]:
    """Two Server processes, each with its own sessions, on one database of one seekdb server."""
    url, base = server_url
    with (
        live_server(base, store=url, log_name="a.log") as first,
        live_server(base, store=url, log_name="b.log") as second,
    ):
        yield first, second


def test_a_server_killed_during_a_batch_leaves_no_partial_batch_on_a_seekdb_server(
    server_url: tuple[str, Path], two_servers: tuple[LiveServer, LiveServer]
) -> None:
    url, base = server_url
    owner = two_servers[0]
    held = writer_lock_probe({"host": "127.0.0.1", "port": PORT, "user": "root"})
    with live_server(base, store=url, log_name="victim.log") as victim:
        kill_during_batch_leaves_all_or_nothing(owner, victim, held)


def test_two_servers_on_a_seekdb_server_extract_each_source_once(two_servers: tuple[LiveServer, LiveServer]) -> None:
    first, second = two_servers
    two_servers_extract_each_source_once(first.base_url, second.base_url, "extracted-once")


def test_a_killed_servers_lease_expires_and_the_next_server_extracts_its_source_on_a_seekdb_server(
    server_url: tuple[str, Path],
) -> None:
    url, base = server_url
    lease = base / "lease"
    lease.mkdir()
    # A database of its own: the module's other Servers (no model) would otherwise claim the Source too.
    killed_mid_extraction_leaves_the_source_to_the_next_server(lease, url.rsplit("/", 1)[0] + "/powercontext_lease")
