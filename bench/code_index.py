"""Code evidence over HTTP: indexing throughput, re-index cost, and code query latency.

Run: .venv/bin/python bench/code_index.py [--files 5000] [--queries 200] [--git]

One Server subprocess on a fresh database. Indexes (1) this repository itself and (2) a generated
tree of ``--files`` files in seven languages, ~80 lines each (a plain directory, or with ``--git`` a
committed repository), each through ``POST …/code/index``; then re-indexes the unchanged synthetic
tree, re-indexes it after editing 1 % of its files, and sends ``--queries`` code queries (identifier,
snake_case, camelCase and word queries drawn from the generated vocabulary) to it. Figures are
client-side wall time of the HTTP calls. No targets: figures only.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from _common import BENCH_DIR, create_scope, describe_target, http_client, median, percentile, running_server

SEED = 20260301
VERBS = ["load", "parse", "build", "apply", "merge", "verify", "rotate", "settle", "refund", "charge", "sync",
         "fetch", "store", "render", "compute"]  # fmt: skip
NOUNS = ["ledger", "invoice", "payment", "token", "session", "webhook", "account", "balance", "refund", "report",
         "cursor", "batch", "receipt", "schedule", "customer", "order", "shipment", "quota", "limit",
         "window"]  # fmt: skip
LANGS = ["py", "js", "ts", "go", "rs", "java", "txt"]


def _camel(words: list[str]) -> str:
    return words[0] + "".join(w.capitalize() for w in words[1:])


def _name(rng: random.Random) -> list[str]:
    return [rng.choice(VERBS), *rng.sample(NOUNS, 2)]


def _body(rng: random.Random, indent: str, lines: int, end: str = "") -> list[str]:
    out = []
    for i in range(lines):
        noun = rng.choice(NOUNS)
        out.append(f"{indent}{noun}_{i} = {rng.choice(VERBS)}_{noun}({i}){end}")
    return out


def make_file(lang: str, index: int, rng: random.Random) -> str:
    """About 80 lines: a header and six definitions of ~12 lines, in the language's own shape."""
    lines: list[str] = []
    for _ in range(6):
        words = _name(rng)
        if lang == "py":
            lines += ["", "", f"def {'_'.join(words)}(value):", f'    """{" ".join(words)}."""', *_body(rng, "    ", 9)]
            lines.append("    return value")
        elif lang in ("js", "ts"):
            lines += [
                "",
                f"export function {_camel(words)}(value) {{",
                *_body(rng, "  ", 9, ";"),
                "  return value;",
                "}",
            ]
        elif lang == "go":
            lines += [
                "",
                f"func {_camel(words).capitalize()}(value int) int {{",
                *_body(rng, "\t", 9),
                "\treturn value",
                "}",
            ]
        elif lang == "rs":
            lines += [
                "",
                f"pub fn {'_'.join(words)}(value: i64) -> i64 {{",
                *_body(rng, "    ", 9, ";"),
                "    value",
                "}",
            ]
        elif lang == "java":
            lines += [
                "",
                f"    public int {_camel(words)}(int value) {{",
                *_body(rng, "        ", 9, ";"),
                "        return value;",
                "    }",
            ]
        else:
            lines += [
                "",
                f"{' '.join(words).capitalize()} notes.",
                *(f"- {rng.choice(NOUNS)} item {i}" for i in range(10)),
            ]
    header = {
        "py": [f'"""Module {index}."""', "import os"],
        "js": [f"// module {index}", 'import { io } from "./io.js";'],
        "ts": [f"// module {index}", 'import { io } from "./io";'],
        "go": [f"package pkg{index % 50}", 'import "fmt"'],
        "rs": [f"//! module {index}", "use std::io;"],
        "java": [f"package pkg{index % 50};", f"public class Module{index} {{"],
        "txt": [f"Module {index}", "========"],
    }[lang]
    footer = ["}"] if lang == "java" else []
    return "\n".join([*header, *lines, *footer]) + "\n"


def make_tree(root: Path, count: int, git: bool) -> None:
    rng = random.Random(SEED)
    for i in range(count):
        lang = LANGS[i % len(LANGS)]
        target = root / f"pkg{i % 50:02d}" / f"sub{i % 7}" / f"module_{i:05d}.{lang}"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(make_file(lang, i, rng), encoding="utf-8")
    if git:
        run = {"cwd": root, "check": True, "capture_output": True}
        subprocess.run(["git", "init", "-q"], **run)  # type: ignore[call-overload]
        subprocess.run(["git", "add", "-A"], **run)  # type: ignore[call-overload]
        subprocess.run(
            ["git", "-c", "user.name=bench", "-c", "user.email=b@example.com", "commit", "-qm", "tree"], **run
        )  # type: ignore[call-overload]


def make_queries(count: int) -> list[str]:
    rng = random.Random(SEED + 1)
    shapes = [
        lambda w: "_".join(w),
        lambda w: _camel(w),
        lambda w: " ".join(w),
        lambda w: f"where do we {w[0]} the {w[1]}",
    ]
    return [shapes[i % len(shapes)](_name(rng)) for i in range(count)]


def index(client: httpx.Client, scope_id: str, path: Path) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    response = client.post(f"/v1/scopes/{scope_id}/code/index", json={"path": str(path)})
    elapsed = time.perf_counter() - t0
    if response.status_code != 200:
        raise RuntimeError(f"index failed: HTTP {response.status_code} {response.text[:300]}")
    result: dict[str, Any] = response.json()
    return result, elapsed


def report(label: str, result: dict[str, Any], seconds: float) -> None:
    rate = result["files_seen"] / seconds
    print(
        f"{label}: {result['files_seen']:,} files seen in {seconds:.2f} s = {rate:,.0f} files/s;"
        f" indexed {result['files_indexed']:,}, unchanged {result['files_unchanged']:,},"
        f" skipped {result['files_skipped_binary'] + result['files_skipped_large'] + result['files_skipped_other']},"
        f" {result['chunks']:,} chunks ({result['kind']})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--git", action="store_true", help="commit the synthetic tree to a git repository")
    args = parser.parse_args()
    print(describe_target())
    with tempfile.TemporaryDirectory(prefix="pc-bench-code-") as tmp:
        work = Path(tmp)
        tree = work / "tree"
        t0 = time.perf_counter()
        make_tree(tree, args.files, args.git)
        print(f"generated {args.files:,} files in {time.perf_counter() - t0:.1f} s (not timed below)")
        # The Server indexes only inside its code roots: this repository and the temporary tree.
        roots = {"POWERCONTEXT_CODE_ROOTS": os.pathsep.join([str(BENCH_DIR.parent), str(work)])}
        with running_server(work / "code.db", work, env=roots) as server, http_client(server) as client:
            create_scope(client, "bench-repo")
            create_scope(client, "bench-code")
            report("this repository", *index(client, "bench-repo", BENCH_DIR.parent))
            report("this repository, unchanged", *index(client, "bench-repo", BENCH_DIR.parent))
            report("synthetic tree", *index(client, "bench-code", tree))
            report("synthetic tree, unchanged", *index(client, "bench-code", tree))
            edited = sorted(tree.rglob("module_*"))[::100]
            for path in edited:
                path.write_text(path.read_text(encoding="utf-8") + "\n// edited\n", encoding="utf-8")
            report(f"synthetic tree, {len(edited)} files edited", *index(client, "bench-code", tree))

            queries = make_queries(args.queries)
            path = "/v1/scopes/bench-code/code/query"
            for q in queries[:20]:  # warm-up, unrecorded
                client.post(path, json={"query": q, "limit": 10})
            durations, with_hits = [], 0
            for q in queries:
                t0 = time.perf_counter()
                response = client.post(path, json={"query": q, "limit": 10})
                durations.append((time.perf_counter() - t0) * 1000.0)
                response.raise_for_status()
                with_hits += bool(response.json()["hits"])
    print(
        f"code query (limit 10) over {args.files:,} files: n={len(durations)} p50={median(durations):.2f} ms"
        f" p95={percentile(durations, 95):.2f} ms max={max(durations):.2f} ms; {with_hits}/{len(durations)} with hits"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
