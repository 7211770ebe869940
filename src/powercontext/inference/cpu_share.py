"""Whether an inference call shares the CPU with other work of the same request.

A local model can spread one short input over every core, which is fastest on an idle machine. When the caller
runs other CPU work at the same moment (the full-text side of an ``auto`` search), the model's threads wait for
the one that lost its core, and one thread is the better choice. The caller says so; the model decides.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_alongside: ContextVar[bool] = ContextVar("powercontext_inference_alongside_other_work", default=False)


@contextmanager
def alongside_other_work() -> Iterator[None]:
    """Within this block (this context only), inference calls run beside other work of the caller."""
    token = _alongside.set(True)
    try:
        yield
    finally:
        _alongside.reset(token)


def shares_cpu() -> bool:
    """True inside ``alongside_other_work``."""
    return _alongside.get()
