"""Added wall time per prompt in the real host CLIs: no PowerContext, the hook alone, hook + MCP server.

Run: .venv/bin/python bench/host_hook_overhead.py [--rounds 7] [--hosts claude-code,codex]
(``--hosts ""``: only the hook process by itself against a bare interpreter, no host CLI.)

For each host (the pinned CLIs ``.ci/run`` installs into ``.ci/node``), three projects in one throwaway
HOME against a fake model on loopback (``tests/fake_models``) and one Server with a Scope of 200 memories:

* ``none``: a plain git project;
* ``hook``: ``powercontext hosts install HOST --yes``, then its MCP server entry removed;
* ``hook+mcp``: the full install.

Each round runs one non-interactive prompt (``claude -p``, ``codex exec``) in each project, in rotating
order; the figures are medians of process wall time, and "added" is the difference to ``none`` in the same
run. Targets (issue 21): hook ≤ 100 ms per host; hook + MCP ≤ 350 ms for ``claude -p``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.fake_models import serve_anthropic, serve_openai_responses  # noqa: E402

from _common import median, running_server, verdict  # noqa: E402

NODE_BIN = REPO / ".ci" / "node" / "node_modules" / ".bin"
VENV_BIN = Path(sys.executable).parent
PROMPT = "How do we roll back a failed deploy?"


def _env(home: Path, extra: dict[str, str]) -> dict[str, str]:
    path = os.pathsep.join([str(VENV_BIN), str(NODE_BIN), "/usr/local/bin", "/usr/bin", "/bin"])
    return {"HOME": str(home), "PATH": path, "LANG": "C.UTF-8", **extra}


def _project(base: Path, name: str) -> Path:
    path = base / name
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path.resolve()


def _install(host: str, project: Path, env: dict[str, str], scope: str, url: str, with_mcp: bool) -> None:
    args = [str(VENV_BIN / "powercontext"), "hosts", "install", host, "--scope", scope, "--url", url, "--yes"]
    subprocess.run(args, cwd=project, env=env, check=True, capture_output=True)
    if not with_mcp:
        (project / (".mcp.json" if host == "claude-code" else ".codex/config.toml")).unlink()


def _command(host: str) -> list[str]:
    if host == "claude-code":
        return [str(NODE_BIN / "claude"), "-p", PROMPT]
    return [str(NODE_BIN / "codex"), "exec", PROMPT]


def _time(host: str, project: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        _command(host), cwd=project, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{host} exited {done.returncode}: {done.stderr[-500:]}")
    return elapsed


def _codex_provider(home: Path, model_url: str) -> None:
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(
        'model = "fake-model"\nmodel_provider = "fake"\n[model_providers.fake]\nname = "fake"\n'
        f'base_url = "{model_url}/v1"\nwire_api = "responses"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
    )


def bench_host(host: str, rounds: int, server_url: str, scope: str, base: Path) -> dict[str, float]:
    home = base / host / "home"
    home.mkdir(parents=True)
    serve = serve_anthropic if host == "claude-code" else serve_openai_responses
    with serve("ok") as model:
        extra = (
            {
                "ANTHROPIC_BASE_URL": model.base_url,
                "ANTHROPIC_API_KEY": "sk-bench",
                "DISABLE_AUTOUPDATER": "1",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            }
            if host == "claude-code"
            else {}
        )
        env = _env(home, extra)
        if host == "codex":
            _codex_provider(home, model.base_url)
        projects = {name: _project(base / host, name) for name in ("none", "hook", "hook+mcp")}
        _install(host, projects["hook"], env, scope, server_url, with_mcp=False)
        _install(host, projects["hook+mcp"], env, scope, server_url, with_mcp=True)
        for project in projects.values():
            _time(host, project, env)  # warm-up: first-run files, page cache
        samples: dict[str, list[float]] = {name: [] for name in projects}
        for index in range(rounds):
            order = list(projects)[index % 3 :] + list(projects)[: index % 3]
            for name in order:
                samples[name].append(_time(host, projects[name], env))
    return {name: median(values) for name, values in samples.items()}


def _child_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def _timed(args: list[str], **kwargs: object) -> tuple[subprocess.CompletedProcess[bytes], float, float]:
    """(result, wall ms, CPU ms of the child): CPU time is what a loaded machine inflates least."""
    cpu, started = _child_cpu_ms(), time.perf_counter()
    done = subprocess.run(args, capture_output=True, **kwargs)  # type: ignore[call-overload]
    return done, (time.perf_counter() - started) * 1000, _child_cpu_ms() - cpu


def hook_alone(server_url: str, base: Path, runs: int = 21) -> dict[str, float]:
    """Medians (ms) of the hook by itself (Server up, context injected) and of a bare interpreter, run in
    alternation: wall time and the child's CPU time of each."""
    project = _project(base, "hook-alone")
    (project / ".powercontext.toml").write_text('scope_id = "bench:hosts"\n')
    payload = json.dumps({"session_id": "b", "cwd": str(project), "prompt": PROMPT}).encode()
    env = {**os.environ, "POWERCONTEXT_URL": server_url, "POWERCONTEXT_HOOK_STATE_DIR": str(base / "state")}
    samples: dict[str, list[float]] = {"hook wall": [], "hook cpu": [], "bare wall": [], "bare cpu": []}
    for _ in range(runs):
        done, wall, cpu = _timed([str(VENV_BIN / "powercontext"), "hook", "claude-code"], input=payload, env=env)
        assert b"additionalContext" in done.stdout, done.stderr
        samples["hook wall"].append(wall)
        samples["hook cpu"].append(cpu)
        _, wall, cpu = _timed([sys.executable, "-c", "pass"])
        samples["bare wall"].append(wall)
        samples["bare cpu"].append(cpu)
    return {name: median(values) for name, values in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--hosts", default="claude-code,codex")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="pc-host-bench-"))
    ok = True
    try:
        with running_server(base / "pc.db", base) as server:
            client = httpx.Client(base_url=server.base_url, timeout=30)
            client.post("/v1/scopes", json={"scope_id": "bench:hosts", "title": "bench"}).raise_for_status()
            for i in range(200):
                text = f"Deploy note {i}: roll back with the release tool, then page the on-call owner {i % 7}."
                client.post(
                    "/v1/scopes/bench:hosts/atomic-memory", json={"text": text, "kind": "fact"}
                ).raise_for_status()
            client.post("/v1/context/prepare", json={"scope_id": "bench:hosts", "query": PROMPT}).raise_for_status()
            alone = hook_alone(server.base_url, base)
            for kind in ("wall", "cpu"):
                hook_ms, bare_ms = alone[f"hook {kind}"], alone[f"bare {kind}"]
                print(
                    f"hook process alone (injecting), {kind} time: {hook_ms:.0f} ms;"
                    f" bare interpreter: {bare_ms:.0f} ms; difference {hook_ms - bare_ms:.0f} ms"
                )
            print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
            for host in filter(None, args.hosts.split(",")):
                figures = bench_host(host, args.rounds, server.base_url, "bench:hosts", base)
                print(f"{host}: median wall time per prompt over {args.rounds} rounds")
                for name, value in figures.items():
                    print(f"  {name:9s} {value * 1000:8.0f} ms")
                hook_ms = (figures["hook"] - figures["none"]) * 1000
                both_ms = (figures["hook+mcp"] - figures["none"]) * 1000
                ok &= verdict(f"{host} hook added", hook_ms, 100, "ms", at_least=False, digits=0)
                if host == "claude-code":
                    ok &= verdict(f"{host} hook + MCP added", both_ms, 350, "ms", at_least=False, digits=0)
                else:
                    print(f"  hook + MCP added: {both_ms:.0f} ms")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
