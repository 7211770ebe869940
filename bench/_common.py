"""Shared benchmark helpers: corpus and queries, server subprocess, seeding, percentiles, verdicts.

Everything runs against a real Server subprocess over HTTP on loopback, as a host would.
"""

from __future__ import annotations

import json
import os
import platform
import random
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"  # gitignored: cached databases live here
CORPUS_VERSION = 1  # bump when make_corpus changes, so cached databases are rebuilt
SCOPE_ID = "bench-project"
BATCH_SIZE = 500
CORPUS_SEED = 20240601
QUERY_SEED = 7

# -- corpus ----------------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    """A vocabulary written as one ``;``-separated block (compact, and stable under the formatter)."""
    return [" ".join(w.split()) for w in text.split(";") if w.strip()]


COMPONENTS = _words(
    """
    auth service; billing worker; search index; ingest pipeline; web dashboard; mobile app; payment gateway;
    notification service; rate limiter; session store; job scheduler; reporting API; export worker; feature flag
    service; audit log; CDN edge config; GraphQL gateway; user profile service; image resizer; email sender;
    webhook dispatcher; metrics collector; tracing sidecar; config loader; migration runner; cache layer;
    permissions model; onboarding flow; admin console; CLI tool; SDK for Python; SDK for TypeScript; Postgres
    cluster; Redis cluster; Kafka consumer; S3 uploader; Terraform modules; Helm chart; CI pipeline; release
    script; load balancer; DNS setup; secrets vault; backup job; data warehouse sync; recommendation model; spam
    filter; invoice generator; checkout page; search ranking; i18n bundle
    """
)

ACTIONS = _words(
    """
    migrate; deprecate; rewrite; split; cache; shard; throttle; retry; batch; paginate; encrypt; compress; index;
    denormalize; version; document; profile; refactor; containerize; replicate; monitor; benchmark; freeze; roll
    back; feature-flag; rate-limit; validate; deduplicate; archive; backfill
    """
)

OBJECTS = _words(
    """
    the session tokens; the retry policy; the connection pool; the billing events; the search results; the audit
    records; the webhook payloads; the user avatars; the nightly exports; the invoice PDFs; the feature flags; the
    error budget; the API keys; the database schema; the cold start time; the p95 latency; the memory footprint;
    the build cache; the test fixtures; the staging data; the OAuth scopes; the JWT expiry; the password hashes;
    the timezone handling; the CSV parser; the pagination cursor; the idempotency keys; the dead letter queue; the
    health checks; the log retention; the TLS certificates; the docker images; the dependency pins; the lock file;
    the schema migrations; the GDPR deletions; the currency rounding; the email templates; the push tokens; the
    thumbnail sizes
    """
)

REASONS = _words(
    """
    because the old approach timed out under peak traffic; since customers reported duplicate charges last month;
    because the on-call rotation kept getting paged at night; to stay under the vendor's request quota; because
    the compliance audit flagged it; so that the mobile clients can work offline; because the query planner
    ignored the composite index; to cut the monthly cloud bill; after the incident review recommended it; because
    the previous library is no longer maintained; so that deploys no longer need a maintenance window; because
    European customers need data residency; to unblock the enterprise pilot; since the integration tests were
    flaky on CI; because memory usage doubled after the last release
    """
)

PEOPLE = _words(
    """
    Alice; Bob; Priya; Chen; Fatima; Diego; Olga; Kenji; Amara; Lars; the platform team; the security team; the
    data team; the mobile team; the SRE on call
    """
)

LIMITS = _words(
    """
    under 200 ms at p95; below 512 MB of memory; within 30 seconds; at most 100 requests per second; under 5 MB
    per payload; below 1 percent error rate; within one availability zone; with zero downtime; behind the VPN;
    under 10 concurrent connections
    """
)

STATUSES = _words(
    """
    blocked on review; half migrated; running in shadow mode; behind a feature flag; deployed to staging only;
    paused pending legal sign-off; live for ten percent of users; waiting on the vendor; green on CI but not
    deployed; being load tested
    """
)

DEADLINES = _words(
    """
    the Friday release; the end of the sprint; the Q3 planning; the security review; the customer demo; the code
    freeze; next Tuesday; the board meeting
    """
)

METRICS = _words(
    """
    p95 latency; error rate; memory usage; CPU time; queue depth; build time; cold start time; cache hit ratio;
    conversion rate; page weight
    """
)

ENVIRONMENTS = _words(
    """
    production; staging; the EU region; the US region; the canary fleet; local dev
    """
)

KINDS = ["decision", "constraint", "fact", "state", "next-step", "outcome", "note"]


_TEMPLATES: dict[str, Sequence[str]] = {
    "decision": [
        "We decided to {action} {object} in the {component} {reason}.",
        "Decision: {action} the {component} before touching {object}, {reason}.",
    ],
    "constraint": [
        "The {component} must keep {object} {limit}.",
        "Constraint from {person}: never {action} {object} in {env} without a rollback plan.",
    ],
    "fact": [
        "The {component} stores {object} in {env} and reads them through the {component2}.",
        "The {component} depends on the {component2} for {object}.",
    ],
    "state": ["The {component} is currently {status}.", "Work to {action} {object} in the {component} is {status}."],
    "next-step": [
        "Next, {person} will {action} {object} in the {component} before {deadline}.",
        "Follow-up: {action} the {component2} once the {component} change lands in {env}.",
    ],
    "outcome": [
        "After we chose to {action} {object}, the {metric} of the {component} dropped by {n} percent.",
        "Shipping the {component} change raised the {metric} in {env} by {n} percent.",
    ],
    "note": [
        "{person} noted that the {component} logs {object} twice in {env}.",
        "Heads up from {person}: the {component} and the {component2} disagree about {object}.",
    ],
}
_EXTRA_CLAUSES = [
    " See ticket PC-{ticket} for details.",
    " This was discussed before {deadline}.",
    " {person} owns this.",
    " It affects {env}.",
    " Related to version v{major}.{minor}.{patch}.",
    " The {metric} must not regress.",
    " Touches {file}.",
]
_FILES = _words("auth/tokens.py; billing/worker.go; search/ranker.rs; web/src/App.tsx; infra/main.tf; Makefile")
_TAGS = sorted({c.split()[0].lower() for c in COMPONENTS})


def _fill(template: str, rng: random.Random) -> str:
    component, component2 = rng.sample(COMPONENTS, 2)
    return template.format(
        component=component,
        component2=component2,
        action=rng.choice(ACTIONS),
        object=rng.choice(OBJECTS),
        reason=rng.choice(REASONS),
        person=rng.choice(PEOPLE),
        limit=rng.choice(LIMITS),
        status=rng.choice(STATUSES),
        deadline=rng.choice(DEADLINES),
        metric=rng.choice(METRICS),
        env=rng.choice(ENVIRONMENTS),
        n=rng.randint(3, 80),
        ticket=rng.randint(100, 9999),
        major=rng.randint(1, 4),
        minor=rng.randint(0, 20),
        patch=rng.randint(0, 9),
        file=rng.choice(_FILES),
    )


def _sentence(kind: str, rng: random.Random) -> str:
    text = _fill(rng.choice(_TEMPLATES[kind]), rng)
    text = text[0].upper() + text[1:]
    wanted = rng.randint(100, 300)
    for template in rng.sample(_EXTRA_CLAUSES, len(_EXTRA_CLAUSES)):  # each clause at most once
        if len(text) >= wanted:
            break
        clause = _fill(template, rng)
        clause = " " + clause[1].upper() + clause[2:]
        if len(text) + len(clause) > 300:
            break
        text += clause
    if len(text) < 100:  # a short template whose long clauses were all rejected
        text += _fill(" Reported in {env} by {person}.", rng)
    return text


def make_corpus(count: int, seed: int = CORPUS_SEED) -> list[dict[str, Any]]:
    """``count`` Atomic Memory create bodies: varied project sentences of 100..~300 bytes, deterministic."""
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    for _ in range(count):
        kind = rng.choice(KINDS)
        tags = rng.sample(_TAGS, rng.randint(0, 3))
        items.append({"text": _sentence(kind, rng), "kind": kind, "tags": tags})
    return items


_QUERY_TEMPLATES = [
    "why did we {action} {object}",
    "what is the status of the {component}",
    "constraints on {object} in {env}",
    "next steps for the {component}",
    "how does the {component} handle {object}",
    "{component} {metric} regression",
    "who owns the {component}",
    "did we {action} the {component2} yet",
    "what broke in {env} after the {component} change",
    "plan to {action} {object} before {deadline}",
]
_OFF_TOPIC_QUERIES = [
    "what should I cook for dinner tonight",
    "best hiking trails near the lake",
    "translate good morning into french",
    "summarize the plot of hamlet",
]


def make_queries(count: int = 60, seed: int = QUERY_SEED) -> list[str]:
    """Varied host-style queries: most share words with the corpus, a few share none."""
    rng = random.Random(seed)
    queries = [_fill(rng.choice(_QUERY_TEMPLATES), rng) for _ in range(count - len(_OFF_TOPIC_QUERIES))]
    queries.extend(_OFF_TOPIC_QUERIES)
    rng.shuffle(queries)
    return queries


# -- target ----------------------------------------------------------------------------------------


def cpu_busy(seconds: float = 1.0) -> float | None:
    """Share of all CPUs busy over ``seconds`` right now (Linux /proc/stat), before we add load."""

    def sample() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return fields[3] + fields[4], sum(fields)  # idle + iowait, total

    try:
        idle0, total0 = sample()
        time.sleep(seconds)
        idle1, total1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    return 1.0 - (idle1 - idle0) / max(total1 - total0, 1)


def describe_target() -> str:
    """Which powercontext the spawned Server runs (the import it will make: PYTHONPATH can point it at
    a snapshot of the sources instead of the editable checkout), and how idle the machine is."""
    import powercontext

    src = Path(powercontext.__file__).resolve().parent
    try:
        git = ["git", "-C", str(src), "describe", "--always", "--dirty"]
        rev = subprocess.run(git, capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        rev = "not a git checkout"
    busy = cpu_busy()
    idle = "CPU busy before start: unknown" if busy is None else f"CPU busy before start: {busy:.0%}"
    if busy is not None and busy > 0.25:
        idle += "  WARNING: something else is running, figures will be noisy"
    return (
        f"powercontext {powercontext.__version__} from {src} (git {rev});"
        f" python {platform.python_version()}; {os.cpu_count()} CPUs; {idle}"
    )


# -- server subprocess -----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class Server:
    process: subprocess.Popen[bytes]
    base_url: str
    ready_seconds: float  # from spawn to the first 200 on /health/ready


def _server_code(db: Path, port: int, store: str | None = None) -> str:
    where = f"store={store!r}" if store else f"db={str(db)!r}"
    return (
        "from powercontext.server.run import serve; from powercontext.settings import Settings; "
        f"serve(Settings.from_env({where}, host='127.0.0.1', port={port}))"
    )


def wait_ready(
    process: subprocess.Popen[bytes], url: str, spawned: float, timeout: float, log: Path, name: str = "server"
) -> float:
    """Seconds from ``spawned`` until ``url`` answers 200; raises if the process exits or time runs out."""
    deadline = spawned + timeout
    with httpx.Client(timeout=1.0) as client:
        while time.perf_counter() < deadline:
            if process.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{name} exited with {process.returncode} before ready:\n{tail}")
            try:
                if client.get(url).status_code == 200:
                    return time.perf_counter() - spawned
            except httpx.TransportError:
                pass
            time.sleep(0.005)
    raise TimeoutError(f"{name} not ready after {timeout:.0f} s (log: {log})")


@contextmanager
def running_server(
    db: Path,
    log_dir: Path,
    ready_timeout: float = 60.0,
    env: dict[str, str] | None = None,
    store: str | None = None,
) -> Iterator[Server]:
    """Spawn the Server on ``db``, or on the store URL ``store`` when given (extra environment from ``env``);
    always terminated on exit. Full text only unless ``env`` or the environment sets ``POWERCONTEXT_EMBEDDINGS``:
    a Server with no embedding setting uses the local model when it is installed, which would turn every
    full-text bench into a hybrid one."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log_path = log_dir / f"server-{port}.log"
    with log_path.open("wb") as log:
        spawned = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-c", _server_code(db, port, store)],
            stdout=log,
            stderr=log,
            env={"POWERCONTEXT_EMBEDDINGS": "none", **os.environ, **(env or {})},
        )
        try:
            ready = wait_ready(process, f"{base_url}/health/ready", spawned, ready_timeout, log_path)
            yield Server(process, base_url, ready)
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)


# -- HTTP helpers ----------------------------------------------------------------------------------


def http_client(server: Server) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, timeout=120.0)


def create_scope(client: httpx.Client, scope_id: str = SCOPE_ID) -> None:
    response = client.post("/v1/scopes", json={"scope_id": scope_id, "title": f"Benchmark {scope_id}"})
    response.raise_for_status()


@dataclass(frozen=True)
class SeedStats:
    count: int
    batches: int
    seconds: float  # summed wall time of the batch calls only

    @property
    def per_second(self) -> float:
        return self.count / self.seconds if self.seconds else 0.0


def seed_batches(
    client: httpx.Client, items: Sequence[dict[str, Any]], scope_id: str = SCOPE_ID, batch_size: int = BATCH_SIZE
) -> SeedStats:
    """Import through the batch endpoint. Bodies are encoded before timing: only the HTTP call counts."""
    path = f"/v1/scopes/{scope_id}/atomic-memory/batch"
    headers = {"content-type": "application/json"}
    total = 0.0
    batches = 0
    for start in range(0, len(items), batch_size):
        body = json.dumps({"items": list(items[start : start + batch_size])}).encode("utf-8")
        t0 = time.perf_counter()
        response = client.post(path, content=body, headers=headers)
        total += time.perf_counter() - t0
        if response.status_code != 201:
            raise RuntimeError(f"batch import failed: HTTP {response.status_code} {response.text[:300]}")
        batches += 1
    return SeedStats(len(items), batches, total)


# -- statistics and verdicts -----------------------------------------------------------------------


def percentile(values: Sequence[float], pct: float) -> float:
    """Linear-interpolated percentile (``pct`` in 0..100), like numpy's default."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * pct / 100.0
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def median(values: Sequence[float]) -> float:
    return percentile(values, 50.0)


def verdict(label: str, value: float, target: float, unit: str, *, at_least: bool, digits: int = 2) -> bool:
    """Print one PASS/FAIL line; returns whether it passed."""
    ok = value >= target if at_least else value <= target
    sign = ">=" if at_least else "<="
    print(f"{'PASS' if ok else 'FAIL'}  {label}: {value:,.{digits}f} {unit} (target {sign} {target:,g} {unit})")
    return ok
