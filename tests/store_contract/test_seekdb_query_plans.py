"""Every statement a prepare runs on OceanBase starts from the search hits too: the same prepares as
test_query_plans.py, on embedded seekdb, each executed statement ``EXPLAIN``-ed by the engine. A full table scan,
or a range scan bounded only by a Scope (every memory of the Scope, or every posting segment of its index), fails.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any, ClassVar

from powercontext.contract.prepare import PrepareContextRequest
from powercontext.runtime import Runtime
from powercontext.store.oceanbase.dialect import Connection, _literal, translate
from powercontext.store.oceanbase.engine import connect, native_reader
from powercontext.store.oceanbase.store import _TEXT_READS, OceanBaseStore
from tests.seekdb_support import fresh_location, require_seekdb
from tests.store_contract.test_query_plans import QUERIES, SCOPE, seed

# |2 |└─TABLE RANGE SCAN|fts_segments|…  (``code_trees`` is exempt: one row per registered tree, not per memory)
_OPERATOR = re.compile(r"^\|(\d+)\s*\|[^A-Z]*([A-Z][A-Z ]*?)\s*\|(?!code_trees\b)")
_DETAILS = re.compile(r"^\s*(\d+) - ", re.MULTILINE)  # where each operator's "Outputs & filters" start
# A range scan bounded by these columns alone reads every row of a Scope (or every posting segment of its index).
_SCOPE_ONLY = {"scope_id", "fts_table", "scope_tag"}


class _TracedConnection(Connection):
    """A reader connection that also records each statement it runs, as MySQL text with its parameters bound."""

    statements: ClassVar[list[str]] = []

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        self._record(translate(sql), params)
        return super().execute(sql, params)

    def query(self, sql: str, params: Sequence[Any] = ()) -> Any:
        self._record(sql, params)
        return super().query(sql, params)

    def _record(self, sql: str, params: Sequence[Any]) -> None:
        if sql.lstrip().upper().startswith("SELECT"):
            bound = sql % tuple(_literal(self.raw, v) for v in params) if params else sql.replace("%%", "%")
            self.statements.append(bound)


class _TracedStore(OceanBaseStore):
    def _connect_reader(self) -> Connection:
        raw = connect(self.location, self.location.database)
        raw.autocommit(True)
        return _TracedConnection(raw, native_reader(self.location), _TEXT_READS)


def _walks(plan: str) -> list[str]:
    """The plan's scans that read a whole table, or a whole Scope's rows or index."""
    operators = {m.group(1): m.group(2) for line in plan.splitlines() if (m := _OPERATOR.match(line))}
    found = [name for name in operators.values() if "FULL SCAN" in name]
    starts = list(_DETAILS.finditer(plan))
    for i, start in enumerate(starts):
        if "RANGE SCAN" not in operators.get(start.group(1), ""):
            continue
        details = plan[start.end() : starts[i + 1].start() if i + 1 < len(starts) else len(plan)]
        conditions = details.split("range_cond(", 1)[1] if "range_cond(" in details else ""
        columns = set(re.findall(r"\.(\w+) (?:=|IN) ", conditions))
        if not columns or columns <= _SCOPE_ONLY:
            found.append(f"{operators[start.group(1)]} on {sorted(columns)} only")
    return found


def test_no_statement_of_a_prepare_walks_a_scopes_rows_on_seekdb() -> None:
    require_seekdb()
    store = _TracedStore(fresh_location("query_plans"))
    try:
        seed(store)
        runtime = Runtime(store)
        _TracedConnection.statements.clear()
        for query in QUERIES:
            request = PrepareContextRequest(scope_id=SCOPE, query=query, include_receipt=True, include_code=True)
            body = runtime.prepare(request, str(uuid.uuid4())).response_body()
            assert b"ledger" in body or query in ("write_ahead_log", "nothing-matches-this")
        statements = list(dict.fromkeys(_TracedConnection.statements))
        assert any("FROM fts_segments" in s and "'atomic_memory_fts'" in s for s in statements)
        walks = {}
        for statement in statements:
            plan = "\n".join(str(row[0]) for row in store._writer.query("EXPLAIN " + statement).fetchall())
            for walk in _walks(plan):
                walks[walk + "  <-  " + statement[:300]] = plan
    finally:
        store.close()
    assert walks == {}, "\n\n".join(f"{key}\n{plan}" for key, plan in walks.items())
