""" "Recall is down" shown to the user once per host session, never to the model.

When the hook fails open because the Server is unreachable or refuses, the host shows one short line
(``systemMessage`` in the hook's JSON output: both Claude Code and Codex display it to the user and do
not add it to the model's context). A marker file per session, created exclusively, makes it once:
``<state dir>/notices/<host>-<sha256(session id)>``. ``POWERCONTEXT_HOOK_QUIET=1`` turns it off; a hook
input without a session id never shows it (once could not be kept).
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

NOTICE_OUTCOMES = frozenset({"server_unavailable", "refused", "version_mismatch"})
NOTICE_DIR = "notices"
_KEEP_S = 7 * 24 * 3600
_MAX_SESSION_CHARS = 512


def notice_text(outcome: str, reason: str, error_code: str | None) -> str:
    """The one line the user sees; content-free (no Scope, query or URL)."""
    why = error_code or reason
    return (
        f"PowerContext recall is unavailable ({outcome}: {why}); no project memory was added."
        " Run: powercontext hosts doctor"
    )


def claim_notice(state_dir: Path, host: str, session_id: object) -> bool:
    """True exactly once per (host, session id): the first caller creates the marker file."""
    if not isinstance(session_id, str) or not session_id or len(session_id) > _MAX_SESSION_CHARS:
        return False
    directory = state_dir / NOTICE_DIR
    key = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / f"{host}-{key}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    except OSError:
        return False  # no place to remember it: stay quiet rather than repeat it every prompt
    os.close(fd)
    _prune(directory)
    return True


def _prune(directory: Path) -> None:
    """Forget sessions older than a week (one directory scan, only when a notice is shown)."""
    cutoff = time.time() - _KEEP_S
    try:
        for entry in os.scandir(directory):
            if entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)
    except OSError:
        pass
