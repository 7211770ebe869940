"""The small library agent-host integrations share.

Automatic recall for a host, per RFC 1435 and RFC 0028: resolve the Scope for the working directory
(``scope``), derive a bounded query from the user's prompt (``query``), send the plain prepare request
with a total deadline (``transport``, ``recall``), accept the answer only if it has exactly the four
PreparedContext keys (``validate``), and print the host's documented hook output or nothing at all
(``hook``). Every failure fails open: no injection, exit 0, one content-free line on stderr.

The modules the hook process imports use only the standard library so it starts fast.

Install, uninstall and doctor are per host: one adapter module per host, listed once in
``registry.HOST_SPECS``; ``install`` plans and applies their file changes (``files``). ``HOSTS`` are the
names ``powercontext hook NAME`` accepts.
"""

from __future__ import annotations

from powercontext.hosts.registry import HOSTS

__all__ = ["HOSTS"]
