"""What the fork server (``tests/forked.py``) loads and computes once, after the ``powercontext`` modules, so that
no forked command or Server does it again after the fork.

Third-party modules that load on first use: the event loop and HTTP protocol uvicorn picks when it starts, the
HTTP client's connection pool and its anyio backend. And each route's body limit, which the Server works out
from its request models when it builds its app (``contract/limits.py`` keeps them, per model, for the process).
Measured on the 2-core machine: ~75 ms of CPU per forked command, ~150 ms per forked Server.
"""

from __future__ import annotations

import contextlib
import importlib

LOADED_ON_FIRST_USE = (
    "anyio._backends._asyncio",
    "anyio.streams.stapled",
    "anyio.streams.tls",
    "certifi",
    "encodings.idna",
    "h11",
    "httpcore",
    "httptools",
    "typer._adapters",
    "typer._click.decorators",
    "uvicorn.lifespan.on",
    "uvicorn.loops.auto",
    "uvicorn.loops.uvloop",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.http.httptools_impl",
    "uvicorn.protocols.websockets.auto",
    "uvloop",
)

for name in LOADED_ON_FIRST_USE:
    # An optional speed-up that is not installed is not used after the fork either.
    with contextlib.suppress(ImportError):
        importlib.import_module(name)

from powercontext.server.app import create_app  # noqa: E402  (after the loop above, which needs nothing of it)

create_app(None)  # the app for schema export: it computes every route's body limit, and builds no runtime
