"""Native ``VECTOR(n)`` columns against float32 bytes (``LONGBLOB``) on embedded seekdb, in-process.

Run: .venv/bin/python bench/oceanbase_vector_column.py [--rows 10000] [--dimension 384] [--repeats 5]

The OceanBase store keeps embeddings as little-endian float32 bytes and searches them in an exact
in-memory matrix that it loads from the table once per change. This measures what a native column
would cost that design, on the same random unit vectors in both tables:

- insert rate, 500 rows per statement, the vector sent as a binary literal (seekdb reads it as float32);
- a cold load of every vector into a NumPy matrix: the query, then decoding (bytes: ``frombuffer``;
  ``VECTOR``: the engine returns only text, parsed here with NumPy);
- whether the loaded vectors equal the written ones bit for bit (``store copy`` and Receipt parity with
  SQLite need that), and how far cosine scores and top-10 orders move if they do not;
- the one exact readout found, ``CAST(element_at(v, i) AS DOUBLE)`` per component, on the first rows.

Figures only, no targets; medians of ``--repeats`` loads, load average beside them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float32]
BATCH = 500


def load_average() -> str:
    return Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "n/a"


def unit_rows(rows: int, dimension: int) -> Matrix:
    m = np.random.default_rng(20261203).standard_normal((rows, dimension)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def insert_rate(cur: Any, table: str, vectors: Matrix) -> float:
    start = time.monotonic()
    for first in range(0, len(vectors), BATCH):
        rows = ",".join(
            f"({k},'m',X'{vectors[k].astype('<f4').tobytes().hex()}')"
            for k in range(first, min(len(vectors), first + BATCH))
        )
        cur.execute(f"INSERT INTO {table} (id, model_id, v) VALUES {rows}")
    return len(vectors) / (time.monotonic() - start)


def load_bytes(cur: Any, dimension: int) -> tuple[Matrix, float, float]:
    start = time.monotonic()
    cur.execute("SELECT id, v FROM vectors_as_bytes WHERE model_id = 'm' ORDER BY id")
    rows = cur.fetchall()
    queried = time.monotonic()
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").astype(np.float32).reshape(len(rows), dimension)
    return matrix, queried - start, time.monotonic() - queried


def load_vector_column(cur: Any, dimension: int) -> tuple[Matrix, float, float]:
    start = time.monotonic()
    cur.execute("SELECT id, v FROM vectors_native WHERE model_id = 'm' ORDER BY id")
    rows = cur.fetchall()  # text such as '[0.123457,-0.0447936,…]'
    queried = time.monotonic()
    text = ",".join(r[1][1:-1] for r in rows)
    flat = np.array(text.split(","), dtype=np.float64).astype(np.float32)
    return flat.reshape(len(rows), dimension), queried - start, time.monotonic() - queried


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--exact-rows", type=int, default=1000, help="rows read by the per-component exact readout")
    args = parser.parse_args()

    import pylibseekdb
    import pymysql

    print(f"embedded seekdb, {args.rows:,} rows x {args.dimension} dims, {os.cpu_count()} CPUs, load {load_average()}")
    with tempfile.TemporaryDirectory(prefix="pc-vector-bench-") as tmp:
        engine = pylibseekdb.open(str(Path(tmp) / "engine"))
        conn = pymysql.connect(**engine.connection_options(), autocommit=True)
        cur = conn.cursor()
        cur.execute("CREATE DATABASE bench")
        cur.execute("USE bench")
        for table, column in (("vectors_as_bytes", "LONGBLOB"), ("vectors_native", f"VECTOR({args.dimension})")):
            cur.execute(f"CREATE TABLE {table} (id BIGINT PRIMARY KEY, model_id VARCHAR(255), v {column} NOT NULL)")
        vectors = unit_rows(args.rows, args.dimension)

        for table in ("vectors_as_bytes", "vectors_native"):
            print(f"insert {table}: {insert_rate(cur, table, vectors):,.0f} rows/s (load {load_average()})")

        for name, load in (("LONGBLOB bytes", load_bytes), ("VECTOR text", load_vector_column)):
            runs = [load(cur, args.dimension) for _ in range(args.repeats)]
            matrix = runs[-1][0]
            query_ms = statistics.median(r[1] for r in runs) * 1000
            decode_ms = statistics.median(r[2] for r in runs) * 1000
            total_ms = statistics.median(r[1] + r[2] for r in runs) * 1000
            differing = int((matrix != vectors).any(axis=1).sum())
            print(
                f"cold load {name}: p50 {total_ms:.0f} ms (query {query_ms:.0f} ms, decode {decode_ms:.0f} ms);"
                f" rows not bit-exact: {differing:,} of {args.rows:,} (load {load_average()})"
            )
            if differing:
                relative = np.abs(matrix - vectors) / np.maximum(np.abs(vectors), np.float32(1e-30))
                queries = vectors[:50]
                moved = sum(
                    not np.array_equal(np.argsort(-(vectors @ q), kind="stable")[:10], np.argsort(-(matrix @ q))[:10])
                    for q in queries
                )
                score_gap = float(np.abs(vectors @ queries.T - matrix @ queries.T).max())
                print(
                    f"  max relative error per component {float(relative.max()):.2e}; cosine scores moved by up to"
                    f" {score_gap:.2e}; top-10 order changed for {moved} of {len(queries)} queries"
                )

        exact_rows = min(args.exact_rows, args.rows)
        columns = ",".join(f"CAST(element_at(v,{i + 1}) AS DOUBLE)" for i in range(args.dimension))
        start = time.monotonic()
        cur.execute(f"SELECT id,{columns} FROM vectors_native WHERE id < {exact_rows} ORDER BY id")
        per_component = np.array([r[1:] for r in cur.fetchall()], dtype=np.float64).astype(np.float32)
        seconds = time.monotonic() - start
        print(
            f"exact readout CAST(element_at(v, i) AS DOUBLE): {exact_rows:,} rows in {seconds * 1000:.0f} ms"
            f" (~{seconds * args.rows / exact_rows:.1f} s for {args.rows:,});"
            f" bit-exact: {np.array_equal(per_component, vectors[:exact_rows])}"
        )
        conn.close()


if __name__ == "__main__":
    main()
