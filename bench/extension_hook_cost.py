"""What the OpenCode plugin adds to each prompt: its ``chat.message`` hook, timed under Node against a real Server.

Run: .venv/bin/python bench/extension_hook_cost.py [--memories 200] [--prompts 30]

A Server with ``--memories`` memories in one Scope; a project with ``powercontext hosts install opencode``
(the plugin file as installed) and ``powercontext`` of this venv on PATH. Node imports the plugin and calls
its ``chat.message`` hook ``--prompts`` times (the wall time OpenCode waits before the model call), and
checks the context arrived through ``experimental.chat.messages.transform``. Beside it: the bare Node
``child_process`` spawn of ``python -c pass`` (the floor any spawned hook pays) and the same Python hook
run directly. Pi's extension runs the same code path (``before_agent_start``). Target (issue 21): <= 100 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import SCOPE_ID, create_scope, http_client, make_corpus, median, running_server, seed_batches

NODE_SCRIPT = r"""
import { spawnSync } from "node:child_process"
const [pluginPath, count, python] = process.argv.slice(2)
const { PowerContextRecall } = await import(pluginPath)
const hooks = await PowerContextRecall({ directory: process.cwd() })
const prompts = ["How do deploys reach production?", "What did we decide about retries?", "Which database?"]
const times = [], floor = []
let injected = 0
for (let i = 0; i < Number(count); i++) {
  const output = { message: { id: `msg_${i}`, sessionID: "s" }, parts: [{ type: "text", text: prompts[i % 3] }] }
  const started = performance.now()
  await hooks["chat.message"]({}, output)
  times.push(performance.now() - started)
  const messages = [{ info: { id: `msg_${i}`, role: "user", sessionID: "s" }, parts: [...output.parts] }]
  await hooks["experimental.chat.messages.transform"]({}, { messages })
  if (messages[0].parts.length === 2) injected++
  const spawned = performance.now()
  spawnSync(python, ["-c", "pass"])
  floor.push(performance.now() - spawned)
}
console.log(JSON.stringify({ times, floor, injected }))
"""


def run_hook_directly(prompt: str, cwd: Path, env: dict[str, str]) -> float:
    import time

    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "powercontext.hosts.hook", "opencode"],
        input=json.dumps({"prompt": prompt, "cwd": str(cwd)}),
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--prompts", type=int, default=30)
    args = parser.parse_args()
    node = shutil.which("node")
    if node is None:
        sys.exit("node is not on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        project = base / "project"
        (project / ".git").mkdir(parents=True)
        with running_server(base / "bench.db", base) as server, http_client(server) as http:
            create_scope(http)
            seed_batches(http, make_corpus(args.memories))
            env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
            env.update(
                PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
                POWERCONTEXT_URL=server.base_url,
                POWERCONTEXT_HOOK_STATE_DIR=str(base / "state"),
            )
            install = [sys.executable, "-m", "powercontext", "hosts", "install", "opencode", "--scope", SCOPE_ID]
            subprocess.run([*install, "--yes"], cwd=project, env=env, check=True, capture_output=True)
            (base / "drive.mjs").write_text(NODE_SCRIPT, encoding="utf-8")
            plugin = project / ".powercontext" / "opencode.js"
            done = subprocess.run(
                [node, str(base / "drive.mjs"), plugin.as_uri(), str(args.prompts), sys.executable],
                cwd=project,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            result = json.loads(done.stdout)
            direct = [run_hook_directly("How do deploys reach production?", project, env) for _ in range(args.prompts)]
    print(f"memories {args.memories}, prompts {args.prompts}; context injected on {result['injected']} prompts")
    print(f"node spawn of `python -c pass` (floor)   p50 {median(result['floor']):7.1f} ms")
    print(f"python -m powercontext.hosts.hook (direct) p50 {median(direct):7.1f} ms")
    print(f"OpenCode plugin chat.message (added/prompt) p50 {median(result['times']):7.1f} ms  target <= 100 ms")


if __name__ == "__main__":
    main()
