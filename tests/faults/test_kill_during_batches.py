"""SIGKILL the Server during four concurrent 500-item batches, ten times, on SQLite and embedded seekdb.

After every restart one memory is written within 15 s (issue 42: embedded seekdb answered 503 after 10 s,
forever, because the killed writer's transaction came back holding the writer lock). A kill that lands while the
engine writes a commit can still leave it a recovered transaction that never ends (the store logs it as
unsettled after its wait at start); the test then takes the way out docs/oceanbase.md gives, ``store copy``.
Batches the kill left unanswered are sent again with the same idempotency keys; every answer is whole (all items
replayed or all new), and in the end the Scope holds exactly one memory per acknowledged item.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.faults.support import Ledger, concurrent_batches, create_scope, start, store_url, stored_keys, write_one
from tests.support import unique

KILLS = 10
BATCHES, BATCH_SIZE = 4, 500
# When the kill lands after the batches start: SQLite writes four batches in well under a second, seekdb in a
# few, so the delays vary to land in the middle of a commit as well as before and between them (an idle machine
# finishes seekdb's batches sooner: with delays up to 1.8 s, 6 of 10 kills once came after all had finished).
DELAYS_S = {"sqlite": (0.15, 0.3, 0.5, 0.8), "seekdb": (0.4, 0.7, 1.0, 1.4)}
# What the store logs when the engine still holds a transaction recovered from before the kill after the wait.
UNSETTLED = "event=store.recovered_transactions.unsettled"


def copied(store: str, directory: Path) -> str:
    """``store`` copied by ``powercontext store copy`` into a new embedded engine directory, as docs/oceanbase.md
    tells an operator to do with a store whose engine keeps a recovered transaction."""
    from tests.seekdb_support import new_engine_dir, store_copy

    target = f"seekdb://{new_engine_dir(directory)}"
    done = store_copy(store, target)
    assert done.returncode == 0, done.stderr[-2000:]
    return target


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "seekdb"])
def test_kills_during_concurrent_batches_lose_nothing_acknowledged(backend: str, tmp_path: Path) -> None:
    store = store_url(backend, tmp_path)
    scope_id = unique("kill")
    server = start(store, tmp_path / "server-0.log")
    ledger = Ledger()
    singles: set[str] = set()
    interrupted = copies = 0
    try:
        create_scope(server.url, scope_id)
        for k in range(KILLS):
            threads = concurrent_batches(server.url, scope_id, ledger, f"k{k}", BATCHES, BATCH_SIZE)
            delays = DELAYS_S[backend]
            time.sleep(delays[k % len(delays)])
            server.kill()
            for thread in threads:
                thread.join(timeout=120)
            interrupted += bool(ledger.unanswered)
            server = start(store, tmp_path / f"server-{k + 1}.log")
            after = write_one(server.url, scope_id, f"single-{k} written after restart {k + 1}")
            if backend == "seekdb" and after.status_code == 503 and UNSETTLED in server.events():
                # The engine kept a transaction it recovered from the kill, with its rows, and never ends it
                # (docs/oceanbase.md): the documented way out is a copy of the store; nothing acknowledged may be
                # missing from it.
                server.stop()
                store = copied(store, tmp_path / f"copy-{k}")
                copies += 1
                server = start(store, tmp_path / f"server-{k + 1}-copy.log")
                after = write_one(server.url, scope_id, f"single-{k} written after restart {k + 1}")
            assert after.status_code == 201, f"restart {k + 1}: {after.status_code} {after.text}\n{server.events()}"
            singles.add(f"single-{k}")
            ledger.replay(server.url, scope_id)
        keys = stored_keys(server.url, scope_id)
    finally:
        server.stop()
    assert ledger.refused == []
    assert interrupted >= KILLS // 2, f"only {interrupted} of {KILLS} kills landed while batches were unanswered"
    assert len(keys) == len(set(keys)), "an item was stored twice"
    assert len(ledger.acknowledged) >= BATCH_SIZE * KILLS
    assert set(keys) == ledger.acknowledged | singles, f"after {copies} copies of the store"
