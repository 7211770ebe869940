"""The one rule every CI guard reads: under CI, untested is unsupported, so a test that cannot run fails.

``CI`` counts as set when it holds anything but an empty string, ``0``, ``false``, ``no`` or ``off`` (any case):
GitHub and most runners set ``true``, some ``1`` or ``yes``. Under CI, ``unavailable`` fails the test with its
reason; elsewhere it skips it. And ``tests/conftest.py`` turns every other skip (a ``skipif`` mark, a
``pytest.skip`` anywhere) into a failure under CI, so ``.ci/run`` fails whenever pytest would report a skip.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

_NOT_SET = ("", "0", "false", "no", "off")


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in _NOT_SET


def unavailable(reason: str) -> NoReturn:
    """Fail under CI, skip elsewhere: something this test needs is missing (``reason`` says what and how to get it)."""
    if under_ci():
        pytest.fail(f"{reason} (under CI every test runs: untested is unsupported)", pytrace=False)
    pytest.skip(reason)
