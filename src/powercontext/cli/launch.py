"""The ``powercontext`` entry point: ``powercontext hook HOST`` runs the host hook without loading the CLI.

A hook runs before every prompt, so it skips Typer and every command module (tens of milliseconds);
every other command goes to ``powercontext.cli.main``.
"""

from __future__ import annotations

import sys


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "hook":
        from powercontext.hosts.hook import main as hook_main

        raise SystemExit(hook_main(sys.argv[2:]))
    from powercontext.cli.main import main as cli_main

    cli_main()
