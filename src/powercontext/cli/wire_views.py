"""What ``memory add``, ``memory search`` and ``context prepare`` print, drawn from the Server's JSON answer.

The views read the wire JSON (a model's ``model_dump(mode="json")``, or the answer's own bytes decoded), so the
full CLI and its short route (``cli.quick``, which loads neither Typer nor pydantic) print the same lines.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from powercontext.cli.terminal import say

Wire = Mapping[str, Any]


def print_json(value: Any) -> None:
    """``value`` as indented JSON on stdout, exact (never made terminal-safe: ``--json`` is for programs)."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def print_memory(memory: Wire) -> None:
    """One Atomic Memory: its address, head, state, kind and date, then its text."""
    ref = memory["artifact_address"]["artifact"]
    say(
        f"{ref['artifact_id']} revision {ref['revision']} (head {memory['head_revision']}, {memory['state']},"
        f" {memory['kind']}, observed {memory['observed_at'][:10]})"
    )
    if memory["merged_into"]:
        say(f"merged into {memory['merged_into']}")
    say(memory["text"])


def print_created(memory: Wire, scope: str) -> None:
    """A new memory, and the earlier ones it may replace (each with the command that retires it)."""
    print_memory(memory)
    if not memory["possibly_supersedes"]:
        return
    say("\nThis may replace earlier memories on the same subject (nothing was changed):")
    for artifact_id in memory["possibly_supersedes"]:
        say(f"  {artifact_id}: if it is outdated, run  powercontext memory retire {artifact_id} -s {scope}")


def print_search(result: Wire) -> None:
    """The mode that ran, then one line per hit: score, address, kind, text."""
    say(f"mode {result['mode']}, {len(result['hits'])} hit(s)")
    for hit in result["hits"]:
        ref = hit["artifact_address"]["artifact"]
        say(f"{hit['score']:7.3f}  {ref['artifact_id']}@{ref['revision']}  [{hit['kind']}]  {hit['text']}")


def print_plain_prepared(prepared: Wire) -> None:
    """A prepared context without a Receipt: the content exactly as an agent gets it, and its size."""
    if prepared["status"] == "empty":
        say("empty: nothing to inject for this request")
    else:
        say(prepared["content"] or "")
        say(f"\n{prepared['content_bytes']} bytes")
