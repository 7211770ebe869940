"""The store-side commands on a store that is not there, or ``store copy`` into another store's data: one line with
a stable code and the exit code of docs/cli.md, no traceback, and nothing created or changed.

A source must exist (``store copy --from``, ``memory reindex``, ``code index --db``): opening one that does not
would create an empty store and report an empty success. A destination may be new, or an earlier, interrupted run
of the same copy (resumed); one holding other data is refused before anything is written.
"""

from __future__ import annotations

import os
from pathlib import Path

from pysqlite3 import dbapi2

from powercontext.store.base import NewMemory
from powercontext.store.sqlite import SqliteStore
from tests import forked

NOT_FOUND, CONFLICT, UNAVAILABLE = 3, 4, 5


def env() -> dict[str, str]:
    """None of the caller's settings; the local embedding model configured (``memory reindex`` needs a provider,
    and the local one is loaded only when it is first called)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    return {**clean, "POWERCONTEXT_EMBEDDINGS": "local"}


def powercontext(*args: str) -> tuple[int, str, str]:
    result = forked.run([*forked.POWERCONTEXT, *args], timeout=180, env=env())
    return result.returncode, result.stdout, result.stderr


def assert_one_line(stderr: str, start: str, after_progress: bool = False) -> None:
    """One error line, ``start``…; with ``after_progress``, after the progress bar's last state."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    if after_progress:
        lines = [line for line in lines if not line.startswith("copying ")]
    assert len(lines) == 1 and lines[0].startswith(start), stderr


def make_store(path: Path, scope_id: str, texts: list[str]) -> None:
    store = SqliteStore(path)
    store.create_scope(scope_id, scope_id.title(), [])
    for i, text in enumerate(texts):
        store.create_memories(scope_id, [NewMemory(text, "fact", ("t",), f"key-{i}", f"d{i}", None)])
    store.close()


def dump(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every table of a SQLite file (the full-text index's own tables too), its schema and rows."""
    conn = dbapi2.connect(str(path))
    try:
        tables = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()
        found = {f"schema {name}": [(sql,)] for name, sql in tables}
        for name, sql in tables:
            if not sql.upper().startswith("CREATE VIRTUAL"):
                found[name] = sorted(conn.execute(f'SELECT * FROM "{name}"').fetchall(), key=repr)
        return found
    finally:
        conn.close()


def test_copy_refuses_a_missing_sqlite_source_and_creates_nothing(tmp_path: Path) -> None:
    missing, target = tmp_path / "x" / "nonexist.db", tmp_path / "x" / "c2.db"
    code, out, err = powercontext("store", "copy", "--from", f"sqlite://{missing}", "--to", f"sqlite://{target}")
    assert code == NOT_FOUND, (out, err)
    assert_one_line(err, f"error: store-not-found: no store at sqlite://{missing}")
    assert out == ""
    assert not (tmp_path / "x").exists()


def test_copy_refuses_a_missing_seekdb_source_and_creates_nothing(tmp_path: Path) -> None:
    missing, target = tmp_path / "seek-typo", tmp_path / "c2.db"
    code, out, err = powercontext("store", "copy", "--from", f"seekdb://{missing}", "--to", f"sqlite://{target}")
    assert code == NOT_FOUND, (out, err)
    assert_one_line(err, f"error: store-not-found: no store at seekdb://{missing}")
    assert not missing.exists() and not target.exists()


def test_copy_refuses_an_empty_seekdb_directory_and_leaves_it_empty(tmp_path: Path) -> None:
    empty = tmp_path / "seek-empty"
    empty.mkdir()
    code, _, err = powercontext("store", "copy", "--from", f"seekdb://{empty}", "--to", f"sqlite://{tmp_path / 'c.db'}")
    assert code == NOT_FOUND, err
    assert_one_line(err, "error: store-not-found:")
    assert list(empty.iterdir()) == [] and not (tmp_path / "c.db").exists()


def test_reindex_refuses_a_missing_store_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "typo-missing.db"
    code, out, err = powercontext("memory", "reindex", "--db", str(missing), "--json")
    assert code == NOT_FOUND, (out, err)
    assert_one_line(err, f"error: store-not-found: no store at sqlite://{missing}")
    assert out == "" and not missing.exists()


def test_code_index_into_a_missing_store_file_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    # The Scope must exist in the store, so a new, empty store file could only ever fail (scope-not-found).
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.py").write_text("def a():\n    return 1\n", encoding="utf-8")
    missing = tmp_path / "typo.db"
    code, out, err = powercontext("code", "index", str(tmp_path / "tree"), "-s", "app", "--db", str(missing))
    assert code == NOT_FOUND, (out, err)
    assert_one_line(err, f"error: store-not-found: no store at sqlite://{missing}")
    assert not missing.exists()


def test_copy_into_an_unrelated_store_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    source, other = tmp_path / "a.db", tmp_path / "b.db"
    make_store(source, "team", [f"deploy note {i}" for i in range(12)])
    # The same Scope id and the same row ids (1, 2, ...), other contents: keys alone would not tell them apart.
    make_store(other, "team", [f"another store's note {i}" for i in range(3)])
    before = dump(other)
    code, out, err = powercontext("store", "copy", "--from", f"sqlite://{source}", "--to", f"sqlite://{other}")
    assert code == CONFLICT, (out, err)
    assert_one_line(err, "error: store-copy-conflict: ")
    assert "copy into an empty store" in err
    assert dump(other) == before


def test_copy_into_a_store_of_other_scopes_is_refused(tmp_path: Path) -> None:
    source, other = tmp_path / "a.db", tmp_path / "b.db"
    make_store(source, "app", ["one", "two"])
    make_store(other, "zzz", ["three"])  # a key after every source key: a resume would have merged into it
    before = dump(other)
    code, _, err = powercontext("store", "copy", "--from", f"sqlite://{source}", "--to", f"sqlite://{other}")
    assert code == CONFLICT, err
    assert_one_line(err, "error: store-copy-conflict: ")
    assert dump(other) == before


def test_copy_into_an_earlier_complete_copy_is_a_no_op_resume(tmp_path: Path) -> None:
    source, target = tmp_path / "a.db", tmp_path / "b.db"
    make_store(source, "team", [f"deploy note {i}" for i in range(5)])
    args = ("store", "copy", "--from", f"sqlite://{source}", "--to", f"sqlite://{target}")
    first, again = powercontext(*args), powercontext(*args)
    assert first[0] == 0 and again[0] == 0, (first, again)
    assert "every table matches" in again[1]


def test_a_store_error_during_the_copy_is_one_line(tmp_path: Path) -> None:
    # A destination that refuses its revisions mid-copy (a trigger of its own): the driver's error is one line
    # naming the table, exit 5; the batches before it stay, as after an interruption.
    source, target = tmp_path / "a.db", tmp_path / "b.db"
    make_store(source, "team", ["deploy note"])
    SqliteStore(target).close()
    conn = dbapi2.connect(str(target))
    conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON revisions BEGIN SELECT RAISE(ABORT, 'refused'); END")
    conn.commit()
    conn.close()
    code, _, err = powercontext("store", "copy", "--from", f"sqlite://{source}", "--to", f"sqlite://{target}")
    assert code == UNAVAILABLE, err
    assert_one_line(err, "error: store-error: copying revisions failed: ", after_progress=True)
