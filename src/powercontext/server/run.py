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

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger("powercontext")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False


class UvicornLine(logging.Filter):
    """uvicorn's own lines (``uvicorn.error``: a malformed request, a failed bind) in the Server's key=value form:
    ``event=uvicorn.warning message="Invalid HTTP request received."``. The exception's type is kept, never its
    text nor a traceback: those may quote the request."""

    def filter(self, record: logging.LogRecord) -> bool:
        import json

        error = record.exc_info[1] if record.exc_info else None
        record.msg = f"event=uvicorn.{record.levelname.lower()} message={json.dumps(record.getMessage())}"
        record.msg += f" error_type={type(error).__name__}" if error is not None else ""
        record.args, record.exc_info, record.exc_text, record.stack_info = None, None, None, None
        return True


# uvicorn's logging (``log_config``): ``uvicorn.error`` through the filter above, in the Server's line format;
# ``uvicorn.access`` is off (``access_log=False``), the Server logs route templates instead.
UVICORN_LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"line": {"()": UvicornLine}},
    "formatters": {"server": {"format": LOG_FORMAT}},
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stderr",
            "formatter": "server",
            "filters": ["line"],
        }
    },
    "loggers": {"uvicorn.error": {"handlers": ["stderr"], "propagate": False}},
}


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
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        access_log=False,
        log_level="warning",
        log_config=UVICORN_LOGGING,
    )
