#!/usr/bin/env python3
"""PowerContext UserPromptSubmit hook for claude-code: a thin shim over ``powercontext.hosts.hook``.

Run by the host with its hook JSON on stdin. Fails open: if PowerContext is not importable by this
interpreter (set POWERCONTEXT_PYTHON to one that has it), nothing is injected and the exit status is 0.
"""

import sys

try:
    from powercontext.hosts.hook import main
except ImportError:
    sys.stderr.write('{"component":"powercontext.hook","outcome":"skipped","reason":"powercontext_not_installed"}\n')
    raise SystemExit(0) from None

raise SystemExit(main(["claude-code"]))
