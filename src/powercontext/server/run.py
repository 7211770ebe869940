"""Runs the Server with uvicorn on the configured store."""

from __future__ import annotations

import gc
import logging
import os
import sys
from collections.abc import Callable

# Set before NumPy loads (the settings import below loads it). Request threads each run small
# matrix products (query embeddings, vector search); with OpenBLAS's default of one thread per core
# they contend: the local model's query embedding measured 94 ms median on a busy 2-core machine,
# 14-18 ms with one BLAS thread. An operator's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from powercontext.settings import Settings


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger("powercontext")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False


def serve(settings: Settings, announce: Callable[[], None] | None = None) -> None:
    """Open the store and serve; ``announce`` runs once the store is open and the app is built (the CLI's
    start-up banner, so a store that is refused never has one printed before its error)."""
    import uvicorn

    from powercontext.runtime import Runtime
    from powercontext.server.app import create_app
    from powercontext.server.auth import AccessTable
    from powercontext.server.host_guard import HostRules

    configure_logging(settings.log_level)
    from powercontext.server.telemetry import configure_tracing

    configure_tracing()
    access = AccessTable.load(settings.access_file) if settings.access_file else None
    runtime = Runtime.from_settings(settings)
    hosts = HostRules(settings.host, settings.allowed_hosts)
    app = create_app(runtime, access=access, inspector=settings.inspector, hosts=hosts)
    if announce is not None:
        announce()
    logging.getLogger("powercontext.server").info("event=server.start host=%s port=%s", settings.host, settings.port)
    # What is built by now (modules, models, the app: some 130,000 objects) lives as long as the process.
    # Frozen, it is left out of the collector's full passes, which otherwise walk all of it from whichever
    # thread allocates, holding the GIL: ~280 ms each on a busy 2-core machine, stalling the event loop
    # while large bodies are parsed (bench/body_parse_liveness.py).
    gc.freeze()
    # uvicorn's own access log prints raw paths (Scope and Artifact ids); ours logs route templates.
    uvicorn.run(app, host=settings.host, port=settings.port, access_log=False, log_level="warning")
