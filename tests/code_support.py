"""A real git repository for code-evidence tests, built with the git command line.

Nothing here calls the code under test: hashes come from hashlib over the bytes on disk, and line
ranges are counted from ``bytes.split``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

SECRET_MARKER = "SECRET-MARKER-5521"
BIG_FILE_BYTES = 1_200_000  # over the 1 MiB default limit

PY_APP = '''"""Payment service entry points."""
import json


# Parses one webhook body.
@register("webhook")
def parse_webhook_payload(raw: bytes) -> dict:
    return json.loads(raw)


class RetryPolicy:
    """How failed charges are retried."""

    def next_delay_seconds(self, attempt: int) -> int:
        return min(2 ** attempt, 300)

    def shouldRetryCharge(self, status: int) -> bool:
        return status >= 500
'''

JS_CLIENT = """import { fetchJson } from "./http.js";

// Turns a raw response into a ledger entry.
export function parseHTTPResponse2(response) {
  const body = response.body;
  return { status: response.status, body };
}

export const loadLedgerEntries = async (client) => {
  const rows = await client.fetchJson("/ledger");
  return rows.map(parseHTTPResponse2);
};
"""

TS_TYPES = """export interface LedgerEntry {
  amountCents: number;
  currencyCode: string;
}

export type SettlementWindow = "daily" | "weekly";
"""

GO_MAIN = """package main

import "fmt"

// ReconcileJob matches bank lines to ledger entries.
type ReconcileJob struct {
\tBatchSize int
}

func (j *ReconcileJob) RunNightly() error {
\tfmt.Println("reconcile", j.BatchSize)
\treturn nil
}
"""

RUST_LIB = """/// A settlement amount in minor units.
#[derive(Debug, Clone)]
pub struct MinorUnits(pub i64);

impl MinorUnits {
    pub fn checked_add_units(self, other: MinorUnits) -> Option<MinorUnits> {
        self.0.checked_add(other.0).map(MinorUnits)
    }
}
"""

JAVA_MAIN = """package payments;

public class FraudScreen {
    private final int threshold;

    public FraudScreen(int threshold) {
        this.threshold = threshold;
    }

    public boolean isSuspiciousTransfer(long amountCents) {
        return amountCents > threshold;
    }
}
"""

NOTES = "Operations notes\n\nThe settlement cutoff is 17:00 UTC.\nEscalate chargeback disputes to finance.\n"


def git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", HOME=str(repo.parent), GIT_AUTHOR_DATE="2026-01-01T00:00:00Z")
    env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"]
    done = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def write(root: Path, relative: str, content: str | bytes) -> Path:
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_bytes(content.encode("utf-8"))
    return target


def make_git_repo(root: Path) -> Path:
    """A committed repository with one file per language, ignored files, a binary, a big file, an untracked
    file and two symlinks (one leaving the tree)."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    write(root, ".gitignore", "*.log\nbuild/\nsecret.env\n")
    write(root, "src/payments/app.py", PY_APP)
    write(root, "web/client.js", JS_CLIENT)
    write(root, "web/types.ts", TS_TYPES)
    write(root, "cmd/reconcile/main.go", GO_MAIN)
    write(root, "crates/money/src/lib.rs", RUST_LIB)
    write(root, "java/payments/FraudScreen.java", JAVA_MAIN)
    write(root, "docs/notes.txt", NOTES)
    write(root, "assets/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    write(root, "docs/latin1.txt", "caf\xe9 cr\xe8me\n".encode("latin-1"))
    write(root, "data/big.txt", ("x" * 99 + "\n") * (BIG_FILE_BYTES // 100))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    # Ignored: never indexed, never readable through the API.
    write(root, "debug.log", f"{SECRET_MARKER} log line\n")
    write(root, "build/generated.py", f"def {SECRET_MARKER.lower().replace('-', '_')}(): pass\n")
    write(root, "secret.env", f"TOKEN={SECRET_MARKER}\n")
    # Untracked but not ignored: indexed.
    write(root, "src/payments/untracked_helper.py", "def untrackedHelperFunction():\n    return 42\n")
    outside = root.parent / f"{root.name}-outside.txt"
    outside.write_text(f"{SECRET_MARKER} outside the tree\n", encoding="utf-8")
    os.symlink(outside, root / "escape_link.txt")
    os.symlink("src/payments/app.py", root / "inner_link.py")
    return root


# Files of make_git_repo that are indexed, and the counts of one first run with the default limit.
INDEXED = {
    ".gitignore",
    "src/payments/app.py",
    "src/payments/untracked_helper.py",
    "web/client.js",
    "web/types.ts",
    "cmd/reconcile/main.go",
    "crates/money/src/lib.rs",
    "java/payments/FraudScreen.java",
    "docs/notes.txt",
}
FIRST_RUN = {
    "files_seen": len(INDEXED) + 5,
    "files_indexed": len(INDEXED),
    "files_unchanged": 0,
    "files_removed": 0,
    "files_skipped_binary": 2,  # logo.png (NUL), latin1.txt (not UTF-8)
    "files_skipped_large": 1,  # big.txt
    "files_skipped_other": 2,  # both symlinks
}


def sha256_of_file(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def lines_of(path: Path, start: int, end: int) -> bytes:
    """Lines start..end (1-based, inclusive) of the file, each with its terminator."""
    data = path.read_bytes()
    parts = data.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
    return b"".join(lines[start - 1 : end])


def root_commit(repo: Path) -> str:
    return git(repo, "rev-list", "--max-parents=0", "HEAD").split()[0]
