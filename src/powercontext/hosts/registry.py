"""The agent hosts ``powercontext hosts install|doctor|uninstall`` know: one adapter per host.

To add a host, write a module with a class satisfying ``powercontext.hosts.adapter.HostAdapter`` and add
one line below (and its name to ``powercontext.hosts.HOSTS`` if it runs ``powercontext hook NAME``).
"""

from __future__ import annotations

from powercontext.hosts.adapter import HostAdapter
from powercontext.hosts.claude_code import ClaudeCode
from powercontext.hosts.codex import Codex

ADAPTERS: dict[str, HostAdapter] = {
    "claude-code": ClaudeCode(),
    "codex": Codex(),
}


def adapter_for(name: str) -> HostAdapter:
    from powercontext.hosts.files import InstallError

    try:
        return ADAPTERS[name]
    except KeyError:
        raise InstallError(f"unknown host {name!r}; choose one of {', '.join(ADAPTERS)}") from None
