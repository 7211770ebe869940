"""Schemathesis hooks for ``test_openapi_fuzz``: which rejections of schema-valid data are by design.

Loaded by the schemathesis subprocess through ``SCHEMATHESIS_HOOKS``. Only ``positive_data_acceptance``
failures are ever dropped, and only these (docs/operations.md, "Rules the schema cannot state"):

* cross-field and state rules JSON Schema cannot express: a Scope listing itself, a merge naming a
  source twice, one section per family and Experience's section cap, a Candidate's target and
  expected revision together, a Topic revise changing something, unique Profile keys, a line range
  that ends before it starts, an index path that must exist on the Server, an ``observed_at`` that is not a
  calendar date or lies in the future;
* UTF-8 byte bounds on text (``maxLength`` counts characters, not bytes);
* integers spelled with a fraction (``8.0``): schemathesis draws them because JSON Schema 2020-12
  counts them as integers, but OpenAPI 3.1.0, which the document declares, defines ``integer`` as a
  JSON number without a fraction or exponent part, and the Server takes only that.
"""

from __future__ import annotations

import json
from typing import Any

import schemathesis

# Stable error codes of rules that depend on more than one field, or on the Server's state.
SEMANTIC_CODES = {"invalid-reference", "invalid-merge", "invalid-line-range", "invalid-code-path"}
# ``invalid-request`` message parts of the same kind (model validators), and the byte bounds.
SEMANTIC_MESSAGES = (
    "each family may appear in at most one section",
    "must be at most 2",  # limit for experience
    "target_artifact_id and expected_revision go together",
    "give at least one of title, body or tags",
    "each key may appear only once",
    "UTF-8 bytes; the limit is",
    # observed_at: a date the pattern admits but the calendar has not (2025-02-30), or one in the future.
    "observed_at must be an RFC 3339",
    "observed_at is in the future",
)
INTEGER_TYPE_MESSAGE = "Input should be a valid integer"


def _value_at(body: Any, location: str) -> Any:
    """The body value a validation location names; union branch names in the location are skipped."""
    current = body
    for part in location.split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
    return current


def _excused(part: str, body: Any) -> bool:
    if any(message in part for message in SEMANTIC_MESSAGES):
        return True
    location, _, message = part.partition(": ")
    if location.endswith(".none") and message == "Input should be None":
        return True  # the null branch of an optional union; the other branch's part says what was wrong
    if message.startswith(INTEGER_TYPE_MESSAGE):
        value = _value_at(body, location)
        return isinstance(value, float) and value.is_integer()
    return False


@schemathesis.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    """False drops the failure: a documented rule refused schema-valid data."""
    if type(failure).__name__ != "RejectedPositiveData":
        return True
    try:
        error = json.loads(response.content)["error"]
    except (ValueError, KeyError, TypeError):
        return True
    if error.get("code") in SEMANTIC_CODES:
        return False
    if error.get("code") == "invalid-request":
        parts = str(error.get("message", "")).split("; ")
        return not all(_excused(part, case.body) for part in parts)
    return True
