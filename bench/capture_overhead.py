"""What capture adds to a prompt: the UserPromptSubmit hook with capture on vs off, against a real Server.

Run: .venv/bin/python bench/capture_overhead.py [--memories 200] [--rounds 30]

A Server with ``--memories`` memories in one Scope; the hook (``python -m powercontext.hosts.hook claude-code``,
what Claude Code runs) is timed end to end, once with capture on and once with ``POWERCONTEXT_CAPTURE=off``,
alternating, ``--rounds`` times each, with a different prompt each round (half of them ``remember: …``). The
prompt is sent as a Source beside the recall request, so capture should add little. Target (issue 40): capture
adds <= 50 ms per prompt (median). Also reported: the Stop hook (capture of a final answer) alone.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import SCOPE_ID, create_scope, http_client, make_corpus, median, running_server, seed_batches, verdict


def run_hook(payload: dict[str, object], env: dict[str, str], *args: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "powercontext.hosts.hook", "claude-code", *args],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        project = base / "project"
        (project / ".git").mkdir(parents=True)
        transcript = base / "transcript.jsonl"
        answer = {"type": "assistant", "message": {"content": [{"type": "text", "text": "Deploys go out Tuesdays."}]}}
        transcript.write_text(json.dumps(answer) + "\n", encoding="utf-8")
        with running_server(base / "bench.db", base) as server, http_client(server) as http:
            create_scope(http)
            seed_batches(http, make_corpus(args.memories))
            env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
            env.update(
                POWERCONTEXT_URL=server.base_url,
                POWERCONTEXT_SCOPE=SCOPE_ID,
                POWERCONTEXT_HOOK_STATE_DIR=str(base / "state"),
            )
            off = {**env, "POWERCONTEXT_CAPTURE": "off"}
            on_ms: list[float] = []
            off_ms: list[float] = []
            stop_ms: list[float] = []
            for i in range(args.rounds):
                prompt = f"remember: deploy train {i} leaves on Tuesday" if i % 2 else f"how do deploys work? ({i})"
                payload = {"prompt": prompt, "cwd": str(project), "session_id": f"bench-{i}"}
                first, second = ((env, on_ms), (off, off_ms)) if i % 2 else ((off, off_ms), (env, on_ms))
                for hook_env, times in (first, second):
                    times.append(run_hook(payload, hook_env))
                stop = {"cwd": str(project), "session_id": f"bench-{i}", "transcript_path": str(transcript)}
                stop_ms.append(run_hook(stop, env, "stop"))
            sources = http.get(f"/v1/scopes/{SCOPE_ID}/sources?limit=200").json()["items"]
    added = median(on_ms) - median(off_ms)
    print(f"hook, capture off: median {median(off_ms):.1f} ms over {len(off_ms)} prompts")
    print(f"hook, capture on:  median {median(on_ms):.1f} ms over {len(on_ms)} prompts")
    print(f"Stop hook (reply capture): median {median(stop_ms):.1f} ms")
    print(f"Sources stored: {len(sources)} (expected {2 * args.rounds})")
    verdict("capture adds per prompt (median on - median off)", added, 50, "ms", at_least=False, digits=1)


if __name__ == "__main__":
    main()
