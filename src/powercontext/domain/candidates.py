"""The candidates recall hands to the Builder, their rank-major merge, and the per-family candidate limits.

They live below ``recall/`` and ``assembly/`` so both can use them without importing each other.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Final, TypeVar

from powercontext.contract.common import CodeEvidenceRef, Family
from powercontext.domain.identity import ArtifactKey, CodeRangeText, code_evidence_ref

T = TypeVar("T")

# How many ranked candidates each family contributes to one prepare: per Scope for Atomic Memory and
# Experience (searched in every Scope), per request for Topic Memory and code (request Scope only), and
# what the Builder considers of each merged family pool (the rest are ``family_limit`` omissions).
CANDIDATE_LIMITS: Final[Mapping[Family, int]] = MappingProxyType(
    {"atomic-memory": 16, "topic-memory": 8, "experience": 8, "code": 16}
)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One retrieved item, in rank order. ``key`` is None when the source had no usable identity."""

    key: ArtifactKey | None
    kind: str
    text: str
    observed: str | None = None  # when the revision's statement was true (canonical UTC); None: unknown


@dataclass(frozen=True, slots=True)
class CodeCandidate(CodeRangeText):
    """One indexed code range; ``text`` is exactly lines start..end, each with its line terminator."""

    def ref(self, end_line: int, snippet: str) -> CodeEvidenceRef:
        """The identity of the leading lines ``start_line..end_line`` actually injected, ``snippet``."""
        digest = "sha256:" + hashlib.sha256(snippet.encode("utf-8")).hexdigest()
        return code_evidence_ref(replace(self, end_line=end_line, snippet_sha256=digest))


def round_robin(lists: Sequence[Sequence[T]]) -> list[T]:
    """Rank-major order: every list's first item, then every second, and so on; each list keeps its order."""
    order: list[T] = []
    depth = max((len(items) for items in lists), default=0)
    for rank in range(depth):
        order.extend(items[rank] for items in lists if rank < len(items))
    return order
