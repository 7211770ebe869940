"""Every agent host PowerContext integrates with, in one table: each name list, help text and error derives from it.

Adding a host is one module (a class satisfying ``powercontext.hosts.adapter.HostAdapter``) plus one
``HostSpec`` line below. This module imports only the standard library: the hook process reads ``HOSTS``
from it at start, and adapters are imported only when a command needs one.

Two kinds of host share the protocol:

* ``hook``: the host runs a command itself on an event (Claude Code, Codex and WorkBuddy's
  ``UserPromptSubmit``); install registers ``powercontext hook NAME`` in the host's hooks file;
* ``extension``: the host loads a plugin (a JavaScript or Python file install writes) that runs the same
  hook within the budget and hands its content to the host (OpenCode, Pi, DSH, Hermes, Bub).

``events`` names, per PowerContext event, the host's own event it is wired to. Today every host wires
``recall`` (before the prompt reaches the model); a host can declare ``capture`` (after a reply) the same
way, without changing the framework.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from powercontext.hosts.adapter import HostAdapter


class HostSpec(NamedTuple):
    name: str  # what `powercontext hosts install NAME` and `powercontext hook NAME` accept
    title: str  # how the host calls itself
    kind: str  # "hook" | "extension" (see the module docstring)
    adapter: str  # "module:Class" implementing HostAdapter, imported on first use
    events: tuple[tuple[str, str], ...] = ()  # (PowerContext event, the host's event), e.g. ("recall", "...")
    mcp: bool = False  # install also registers the MCP server (``powercontext mcp``, run from PATH)


HOST_SPECS: tuple[HostSpec, ...] = (
    HostSpec(
        "claude-code", "Claude Code", "hook", "claude_code:ClaudeCode", (("recall", "UserPromptSubmit"),), mcp=True
    ),
    HostSpec("codex", "Codex", "hook", "codex:Codex", (("recall", "UserPromptSubmit"),), mcp=True),
    HostSpec("opencode", "OpenCode", "extension", "opencode:OpenCode", (("recall", "chat.message"),), mcp=True),
    HostSpec("pi", "Pi", "extension", "pi:Pi", (("recall", "before_agent_start"),)),
    HostSpec("bub", "Bub", "extension", "bub:Bub", (("recall", "before_llm_call"),)),
    HostSpec("hermes", "Hermes Agent", "extension", "hermes:Hermes", (("recall", "pre_llm_call"),)),
    HostSpec("workbuddy", "WorkBuddy", "hook", "workbuddy:WorkBuddy", (("recall", "UserPromptSubmit"),)),
    HostSpec("dsh", "DSH", "extension", "dsh:Dsh", (("recall", "agent/pre-step"),)),
)

HOSTS: tuple[str, ...] = tuple(spec.name for spec in HOST_SPECS)


class UnknownHost(ValueError):
    """A host name not in the registry; the message lists every known host."""


def names_text(conjunction: str = "") -> str:
    """``"claude-code, codex, …"`` (``"…, opencode or pi"`` with ``conjunction="or"``)."""
    if not conjunction or len(HOSTS) < 2:
        return ", ".join(HOSTS)
    return f"{', '.join(HOSTS[:-1])} {conjunction} {HOSTS[-1]}"


def titles_text() -> str:
    titles = [spec.title for spec in HOST_SPECS]
    return f"{', '.join(titles[:-1])} and {titles[-1]}"


def spec_for(name: str) -> HostSpec:
    for spec in HOST_SPECS:
        if spec.name == name:
            return spec
    raise UnknownHost(f"unknown host {name!r}; choose one of {names_text()}")


def adapter_for(name: str) -> HostAdapter:
    """The adapter for ``name`` (``UnknownHost`` lists every known host)."""
    import importlib  # here, not at module level: the per-prompt hook imports this module, never an adapter

    module_name, _, class_name = spec_for(name).adapter.partition(":")
    module = importlib.import_module(f"powercontext.hosts.{module_name}")
    adapter: HostAdapter = getattr(module, class_name)()
    return adapter


def all_adapters() -> dict[str, HostAdapter]:
    return {name: adapter_for(name) for name in HOSTS}
