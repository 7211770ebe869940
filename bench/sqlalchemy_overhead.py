"""What SQLAlchemy Core would add to a prepare's store reads, on SQLite and on embedded seekdb, at N memories.

Run: .venv/bin/python bench/sqlalchemy_overhead.py [--size 10000] [--queries 40] [--rounds 15]
     [--backends sqlite,seekdb]

Needs ``sqlalchemy`` installed (it is not a dependency of PowerContext; ``pip install sqlalchemy`` into a venv used
only for this measurement). Not a rewrite: each backend's store gets N memories, then the store reads of a
prepare (``get_scope``, ``search_text``, ``search_topics``, ``search_experiences``, ``read_profile_snapshot``,
``read_prompt_head``, ``has_code_trees``) run for every query while a recorder notes each statement the driver
receives, with its parameters. Those exact statements are then replayed, rounds interleaved, three ways:

- ``raw``: the driver as the store calls it today (``sqlite3`` ``execute``; on seekdb the store's own path, which
  sends text-only reads through the embedded engine's C client and the rest through pymysql);
- ``driver_sql``: SQLAlchemy Core ``Connection.exec_driver_sql`` (the thinnest Core path: no compilation);
- ``text``: ``Connection.execute(text(...), {...})`` with named parameters (what Core statements cost at least:
  a ``select()`` construct adds its compile-cache lookup on top of this).

It prints, per backend, the median time of one prepare's statements each way and the median overhead per
statement and per prepare. Compare the per-prepare overhead with the prepare p50 of ``bench/oceanbase_prepare.py``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _common import make_corpus, make_queries
from powercontext.store.base import NewMemory
from powercontext.text.tokenize import query_terms

Statement = tuple[str, str, tuple[Any, ...]]  # (path, driver text, parameters)
SCOPE = "bench"


def _fill(store: Any, size: int) -> None:
    store.create_scope(SCOPE, "bench", [])
    corpus = make_corpus(size)
    for start in range(0, size, 500):
        items = [NewMemory(c["text"], c["kind"], tuple(c["tags"])) for c in corpus[start : start + 500]]
        store.create_memories(SCOPE, items)


def _prepare_reads(store: Any, query: str) -> None:
    """The store reads one fts prepare makes (assembly and recall), in their order."""
    terms = query_terms(query)
    store.get_scope(SCOPE)
    store.read_profile_snapshot(SCOPE)
    store.search_text(SCOPE, terms, 40)
    store.search_topics(SCOPE, terms, 10)
    store.search_experiences(SCOPE, terms, 10)
    store.has_code_trees(SCOPE)
    store.read_prompt_head(SCOPE, "assembly.summary")


class _SqliteRecorder:
    def __init__(self, conn: Any, log: list[Statement]) -> None:
        self._conn, self._log = conn, log

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        self._log.append(("sqlite", sql, tuple(params)))
        return self._conn.execute(sql, params)


def _record_sqlite(store: Any, queries: list[str]) -> list[list[Statement]]:
    real = store._reader()
    recorded = []
    for query in queries:
        log: list[Statement] = []
        store._local.conn = _SqliteRecorder(real, log)
        _prepare_reads(store, query)
        recorded.append(log)
    store._local.conn = real
    return recorded


def _record_seekdb(store: Any, queries: list[str]) -> list[list[Statement]]:
    conn = store._reader()
    query, read_native = conn.query, conn._read_native
    log: list[Statement] = []

    def recording_query(sql: str, params: Sequence[Any] = ()) -> Any:
        log.append(("pymysql", sql, tuple(params)))
        return query(sql, params)

    def recording_native(native: Any, sql: str, params: Sequence[Any]) -> Any:
        log.append(("native", sql, tuple(params)))
        return read_native(native, sql, params)

    recorded = []
    conn.query, conn._read_native = recording_query, recording_native
    try:
        for text in queries:
            log.clear()
            _prepare_reads(store, text)
            recorded.append(list(log))
    finally:
        del conn.query, conn._read_native
    return recorded


def _named(sql: str, marker: str) -> str:
    """``?``/``%s`` placeholders as ``:p0``, ``:p1``… (the statements hold no such characters in literals)."""
    count = iter(range(1 << 30))
    return re.sub(re.escape(marker), lambda _: f":p{next(count)}", sql)


def _time_each(run: Callable[[Statement], None], statements: list[Statement]) -> float:
    """Milliseconds to run every statement of one prepare, in order."""
    started = time.perf_counter_ns()
    for statement in statements:
        run(statement)
    return (time.perf_counter_ns() - started) / 1e6


def _compare(
    name: str, prepares: list[list[Statement]], ways: dict[str, Callable[[Statement], None]], rounds: int
) -> None:
    samples: dict[str, list[float]] = {way: [] for way in ways}
    for round_number in range(rounds):
        order = list(ways) if round_number % 2 == 0 else list(reversed(ways))
        for statements in prepares:
            for way in order:
                samples[way].append(_time_each(ways[way], statements))
    per_prepare = statistics.median(len(s) for s in prepares)
    raw = statistics.median(samples["raw"])
    print(f"\n{name}: {per_prepare:.0f} statements per prepare (median), {len(prepares)} queries x {rounds} rounds")
    print(f"  {'way':<12} {'p50 ms/prepare':>15} {'overhead ms':>12} {'µs/statement':>13}")
    for way, values in samples.items():
        p50 = statistics.median(values)
        extra = p50 - raw
        print(f"  {way:<12} {p50:>15.3f} {extra:>12.3f} {1000 * extra / per_prepare:>13.1f}")


def _sqlite_ways(store: Any, path: Path) -> dict[str, Callable[[Statement], None]]:
    import sqlalchemy as sa

    from powercontext.store.core.driver import sqlite

    raw = store._reader()
    # The store's own connection factory (same driver build, same PRAGMAs), so only SQLAlchemy's layer differs.
    engine = sa.create_engine(f"sqlite:///{path}", module=sqlite, creator=store._connect, poolclass=sa.pool.StaticPool)
    sa_conn = engine.connect()
    texts: dict[str, Any] = {}

    def via_text(s: Statement) -> None:
        clause = texts.get(s[1])
        if clause is None:
            clause = texts[s[1]] = sa.text(_named(s[1], "?"))
        sa_conn.execute(clause, {f"p{i}": v for i, v in enumerate(s[2])}).fetchall()

    return {
        "raw": lambda s: raw.execute(s[1], s[2]).fetchall(),
        "driver_sql": lambda s: sa_conn.exec_driver_sql(s[1], s[2]).fetchall(),
        "text": via_text,
    }


def _seekdb_ways(store: Any) -> dict[str, Callable[[Statement], None]]:
    import sqlalchemy as sa

    from powercontext.store.oceanbase.engine import connect

    conn = store._reader()
    native = conn._native
    location = store.location

    def raw(s: Statement) -> None:
        if s[0] == "native" and native is not None:
            conn._read_native(native, s[1], s[2]).fetchall()
        else:
            conn.query(s[1], s[2]).fetchall()

    def pymysql_only(s: Statement) -> None:
        conn.query(s[1], s[2]).fetchall()

    def make() -> Any:
        session = connect(location, location.database)
        session.autocommit(True)
        return session

    engine = sa.create_engine("mysql+pymysql://", creator=make, poolclass=sa.pool.StaticPool)
    # Autocommit reads, as the store's reader sessions are (no transaction held open across statements).
    sa_conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    texts: dict[str, Any] = {}

    def via_text(s: Statement) -> None:
        clause = texts.get(s[1])
        if clause is None:
            clause = texts[s[1]] = sa.text(_named(s[1].replace("%%", "%"), "%s"))
        sa_conn.execute(clause, {f"p{i}": v for i, v in enumerate(s[2])}).fetchall()

    return {
        "raw": raw,
        "pymysql_only": pymysql_only,
        "driver_sql": lambda s: sa_conn.exec_driver_sql(s[1], s[2] or None).fetchall(),
        "text": via_text,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--backends", default="sqlite,seekdb")
    args = parser.parse_args()
    queries = make_queries(args.queries)
    with tempfile.TemporaryDirectory(prefix="pc-sa-") as work:
        if "sqlite" in args.backends:
            from powercontext.store.sqlite import SqliteStore

            path = Path(work) / "store.db"
            sqlite_store = SqliteStore(path)
            _fill(sqlite_store, args.size)
            prepares = _record_sqlite(sqlite_store, queries)
            _compare(f"SQLite, {args.size:,} memories", prepares, _sqlite_ways(sqlite_store, path), args.rounds)
            sqlite_store.close()
        if "seekdb" in args.backends:
            from powercontext.store.location import StoreLocation
            from powercontext.store.oceanbase.store import OceanBaseStore

            seekdb_store = OceanBaseStore(StoreLocation("seekdb", path=Path(work) / "engine", database="bench"))
            _fill(seekdb_store, args.size)
            prepares = _record_seekdb(seekdb_store, queries)
            _compare(f"embedded seekdb, {args.size:,} memories", prepares, _seekdb_ways(seekdb_store), args.rounds)
            seekdb_store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
