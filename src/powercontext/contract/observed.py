"""``observed_at``: when a statement was true, as given by its writer (RFC 3339), kept in one canonical form."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Final

from pydantic import AfterValidator, Field

# A writer's clock may run a little ahead of the Server's; more than this is a mistake, not skew.
FUTURE_SKEW: Final = timedelta(minutes=5)
# RFC 3339 full-date, or date-time with seconds, optional fraction (at most 9 digits) and a zone (Z or ±hh:mm).
_RFC3339: Final = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}([Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2}))?"
)
# The schema states the characters and the length (so the request size bound stays exact: contract/limits.py);
# the shape and the calendar are checked by ``parse_observed``.
OBSERVED_PATTERN: Final = r"^[0-9TtZz:.+ -]+$"
OBSERVED_MAX_LENGTH: Final = len("2025-07-16T09:30:00.123456789+02:00")
FUTURE_MESSAGE: Final = "observed_at is in the future"


def canonical_time(moment: datetime) -> str:
    """UTC with milliseconds and a ``Z``: the form every stored timestamp has, so text order is time order."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_observed(value: str, now: datetime | None = None) -> str:
    """``value`` (a date, read as midnight UTC, or a date-time with a zone) in canonical form.

    Raises ``ValueError`` for a value that is not a real time, or one more than ``FUTURE_SKEW`` ahead of ``now``.
    """
    text = value.strip()
    if not _RFC3339.fullmatch(text):
        raise ValueError(
            "observed_at must be an RFC 3339 date or date-time with a zone, e.g. 2025-07-16T09:30:00Z"
        ) from None
    try:
        # The pattern has checked the shape; this checks the calendar (no February 30th).
        moment = datetime.fromisoformat(text.upper() if len(text) > 10 else text)
    except ValueError:
        raise ValueError(
            "observed_at must be an RFC 3339 date or date-time with a zone, e.g. 2025-07-16T09:30:00Z"
        ) from None
    if len(text) == 10:
        moment = moment.replace(tzinfo=UTC)
    if moment.tzinfo is None:
        raise ValueError("observed_at needs a zone (Z or ±hh:mm)")
    if moment - (now or datetime.now(UTC)) > FUTURE_SKEW:
        raise ValueError(f"{FUTURE_MESSAGE} (more than 5 minutes ahead of the Server's clock)")
    try:
        return canonical_time(moment)
    except OverflowError:  # a zone that moves the first or last day of year 1..9999 out of the calendar
        raise ValueError("observed_at must be an RFC 3339 date-time within years 1..9999 in UTC") from None


ObservedAt = Annotated[
    str,
    Field(
        pattern=OBSERVED_PATTERN,
        max_length=OBSERVED_MAX_LENGTH,
        description="When the statement was true (RFC 3339 date or date-time with zone; stored as UTC). At most "
        "5 minutes in the future. Omit for now.",
        examples=["2025-07-16T09:30:00Z"],
    ),
    AfterValidator(parse_observed),
]
