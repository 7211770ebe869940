"""The registered Prompt keys, in the order the Server defines them (standard library only).

``prompts.definitions`` builds one built-in definition per key here and checks it defines no other, so the CLI's
help, which must not import the definitions (they load ``rfc8785`` and the wire models), names exactly the keys the
Server accepts.
"""

from __future__ import annotations

from typing import Final

MEMORY_RERANK: Final = "memory.rerank"
RECALL_EXPAND: Final = "recall.expand"
MEMORY_EXTRACT: Final = "memory.extract"
PROMPT_KEYS: Final = (MEMORY_RERANK, RECALL_EXPAND, MEMORY_EXTRACT)


def listed(keys: tuple[str, ...] = PROMPT_KEYS) -> str:
    """``a, b or c``."""
    return keys[0] if len(keys) == 1 else f"{', '.join(keys[:-1])} or {keys[-1]}"
