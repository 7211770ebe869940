"""The two-Server cases of test_seekdb_two_servers.py against a seekdb *server* (``oceanbase://``).

Not collected on its own (no ``test_`` prefix): ``test_seekdb_server.py`` runs this module with pytest
inside a network namespace it creates, because the seekdb server binds every interface.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import LiveServer, live_server
from tests.e2e.test_seekdb_two_servers import (  # the same cases, run here with the fixture below
    test_compare_and_set_across_servers_has_exactly_one_winner,
    test_concurrent_writers_on_two_servers_lose_nothing,
)
from tests.seekdb_server import seekdb_server

__all__ = [
    "test_compare_and_set_across_servers_has_exactly_one_winner",
    "test_concurrent_writers_on_two_servers_lose_nothing",
]


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, LiveServer]]:
    """Two Server processes, each with its own sessions, on one database of one seekdb server."""
    base: Path = tmp_path_factory.mktemp("seekdb-server")
    with (
        seekdb_server(base / "engine") as url,
        live_server(base, store=url, log_name="a.log") as first,
        live_server(base, store=url, log_name="b.log") as second,
    ):
        yield first, second
