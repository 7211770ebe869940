"""The extraction suite: conversations in, the memories a careful engineer would keep out, scored.

``conversations.jsonl`` holds one conversation a line: ``{"id", "turns": [{"kind": "prompt"|"reply", "content",
"operations"?}], "expected": [fact, ...], "outdated": [fact, ...], "secrets": [text, ...]}``. Each turn is captured
as a Source of a fresh Scope and extracted before the next one (so a later turn can revise what an earlier one
wrote); ``operations`` is what a careful model answers for that turn, used only by the fake model of the CI run.

Scores, by the suite's own matching rule (``closest``: a memory states the listed fact it shares the most content
words with, at least 60%): **recall** (expected facts found among the active
memories), **precision** (active memories that are expected facts), **outdated_active** (facts the conversation
replaced that are still active: a revision or a merge should have replaced them, not a duplicate beside them) and
**secrets_stored** (a listed secret found in any memory or stored Source).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from powercontext.client import PowerContextClient

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "is",
        "are",
        "be",
        "to",
        "of",
        "for",
        "and",
        "or",
        "in",
        "on",
        "at",
        "with",
        "by",
        "it",
        "this",
        "that",
    ]
)
MATCH_THRESHOLD = 0.6


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    turns: tuple[tuple[str, str], ...]  # (kind, content)
    expected: tuple[str, ...]
    outdated: tuple[str, ...]
    secrets: tuple[str, ...]


def load_conversations(suite_dir: Path) -> list[Conversation]:
    """``conversations.jsonl`` of ``suite_dir``; ``ValueError`` naming the line for anything malformed."""
    path = suite_dir / "conversations.jsonl"
    found: list[Conversation] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            turns = tuple((str(t["kind"]), str(t["content"])) for t in raw["turns"])
            found.append(
                Conversation(
                    str(raw["id"]),
                    turns,
                    tuple(raw.get("expected", ())),
                    tuple(raw.get("outdated", ())),
                    tuple(raw.get("secrets", ())),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: not a conversation ({type(exc).__name__})") from None
    return found


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def similarity(a_text: str, b_text: str) -> float:
    """The share of content words two statements have in common (Jaccard)."""
    a, b = _words(a_text), _words(b_text)
    return len(a & b) / len(a | b) if a and b else 0.0


def same_fact(expected: str, stored: str) -> bool:
    """The suite's rule: the two statements share at least 60% of their content words."""
    return similarity(expected, stored) >= MATCH_THRESHOLD


def closest(memory: str, facts: list[str]) -> str | None:
    """The fact ``memory`` states: the most similar one it matches (an updated fact and the one it replaced differ
    in a few words, so a memory is counted as the one it is closest to)."""
    scored = [(similarity(fact, memory), fact) for fact in facts]
    best = max(scored, default=(0.0, ""))
    return best[1] if best[0] >= MATCH_THRESHOLD else None


async def run_conversation(
    client: PowerContextClient, scope_id: str, conversation: Conversation, extract: Callable[[], None]
) -> dict[str, Any]:
    """Capture each turn, extract it, then score the Scope's active memories against the conversation."""
    await client.create_scope(scope_id, f"extraction eval: {conversation.id}")
    for kind, content in conversation.turns:
        await client.capture_source(scope_id, kind, content)  # type: ignore[arg-type]
        extract()
    memories = [m.text for m in (await client.list_memories(scope_id, limit=200)).items]
    stored = list(memories)
    for summary in (await client.list_sources(scope_id, limit=200)).items:
        stored.append((await client.get_source(scope_id, summary.source_id)).content)
    facts = [*conversation.expected, *conversation.outdated]
    stated = [closest(m, facts) for m in memories]
    found = [e for e in conversation.expected if e in stated]
    kept = [fact for fact in stated if fact in conversation.expected]
    return {
        "id": conversation.id,
        "expected": len(conversation.expected),
        "found": len(found),
        "memories": len(memories),
        "relevant": len(kept),
        "outdated_active": sum(1 for o in conversation.outdated if o in stated),
        "secrets_stored": sum(1 for s in conversation.secrets if any(s in text for text in stored)),
    }


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    expected = sum(r["expected"] for r in results)
    memories = sum(r["memories"] for r in results)
    return {
        "conversations": len(results),
        "recall": round(sum(r["found"] for r in results) / expected, 4) if expected else 1.0,
        "precision": round(sum(r["relevant"] for r in results) / memories, 4) if memories else 1.0,
        "outdated_active": sum(r["outdated_active"] for r in results),
        "secrets_stored": sum(r["secrets_stored"] for r in results),
        "per_conversation": results,
    }
