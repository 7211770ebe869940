"""Schemathesis hooks for ``test_openapi_fuzz``: which rejections of schema-valid data are by design.

Loaded by the schemathesis subprocess through ``SCHEMATHESIS_HOOKS``. Only ``positive_data_acceptance``
failures are ever dropped, and only these (docs/operations.md, "Rules the schema cannot state"): rules that
relate a value to another part of the request or to the Server's state, which JSON Schema cannot express.

* a Scope listing itself in ``references`` (the id is in the body on create, in the path on update), and a
  referenced Scope that does not exist;
* a merge naming a source twice or a source that is not an active head;
* unique Profile keys (the items are objects; ``uniqueItems`` compares whole items);
* a code line range that ends before it starts (two query parameters) and an index path that must exist;
* an Atomic Memory's ``observed_at`` that the pattern admits but the calendar has not (2025-02-30), or
  one more than 5 minutes in the future (it depends on the Server's clock);
* UTF-8 byte bounds on text (``maxLength`` counts characters, not bytes);
* ``410 purged``: an exact read of an Artifact or Source that an earlier (stateful) step purged.

Everything else the schema states: one section per family and Experience's section cap, a Candidate's
target and expected revision together, a Topic revise changing something; an integer written ``8.0`` is
taken as ``8``, as JSON Schema counts it.
"""

from __future__ import annotations

import json
from typing import Any

import schemathesis

# Stable error codes of rules that depend on more than one field, or on the Server's state.
SEMANTIC_CODES = {"invalid-reference", "invalid-merge", "invalid-line-range", "invalid-code-path", "purged"}
# ``invalid-request`` message parts of the same kind (model validators), and the byte bounds.
SEMANTIC_MESSAGES = (
    "each key may appear only once",
    "UTF-8 bytes; the limit is",
    # observed_at: a date the pattern admits but the calendar has not (2025-02-30), or one in the future.
    "observed_at must be an RFC 3339",
    "observed_at is in the future",
)


def _excused(part: str) -> bool:
    if any(message in part for message in SEMANTIC_MESSAGES):
        return True
    location, _, message = part.partition(": ")
    # The null branch of an optional union; the other branch's part says what was wrong.
    return location.endswith(".none") and message == "Input should be None"


# 404 codes that name what a request body points at (a merge source, a revision, a Scope in
# ``context_references``), not the resource in its path.
BODY_REFERENCE_CODES = {"artifact-not-found", "revision-not-found", "referenced-scope-not-found"}


def _error(response: Any) -> dict[str, Any] | None:
    try:
        error = json.loads(response.content)["error"]
    except (ValueError, KeyError, TypeError):
        return None
    return error if isinstance(error, dict) else None


@schemathesis.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    """False drops the failure: a documented rule refused schema-valid data, or a stateful link's 404 is about
    an id the body invented (the Scope that was just created exists; the merge source it names does not)."""
    kind = type(failure).__name__
    error = _error(response)
    if kind == "EnsureResourceAvailability":
        return error is None or error.get("code") not in BODY_REFERENCE_CODES
    if kind != "RejectedPositiveData" or error is None:
        return True
    if error.get("code") in SEMANTIC_CODES:
        return False
    if error.get("code") == "invalid-request":
        parts = str(error.get("message", "")).split("; ")
        return not all(_excused(part) for part in parts)
    return True
