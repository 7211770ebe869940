"""How much one prepare may search, whatever its request: the bounds that keep its cost independent of how many
Scopes it references and how long its query is (issue 37).

- **Scopes searched.** A Scope may reference 64 others; a prepare searches the request Scope and its first
  ``MAX_SEARCHED_SCOPES - 1`` readable references, in the order the Scope lists them (its owner's order of
  importance). The rest are not searched.
- **Postings.** The full-text search ranks by reading each kept term's postings; one prepare may read about as
  many as one Scope's search may (``POSTING_BUDGET``) in total, shared by the Scopes it searches (never less than
  ``MIN_SCOPE_POSTINGS`` per Scope). Terms are kept rarest first (``store.core.terms.ranked_terms``), so a
  smaller share keeps the most selective terms.
- **Query terms** are capped after normalization (``text.tokenize.query_terms``, tokenized once per prepare), and
  each searched Scope ranks at most its share of ``PREPARE_RANKED_TERMS`` (never less than ``MIN_SCOPE_TERMS``),
  again the rarest first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from powercontext.store.core.terms import MAX_RANKED_TERMS, POSTING_BUDGET, SearchShare

MAX_SEARCHED_SCOPES: Final = 16
PREPARE_POSTING_BUDGET: Final = POSTING_BUDGET
MIN_SCOPE_POSTINGS: Final = 256
PREPARE_RANKED_TERMS: Final = 64
MIN_SCOPE_TERMS: Final = 8


def searched_scopes(scope_ids: Sequence[str]) -> tuple[str, ...]:
    """The Scopes one prepare searches: the request Scope first, then references in order, at most
    ``MAX_SEARCHED_SCOPES``."""
    return tuple(scope_ids[:MAX_SEARCHED_SCOPES])


def scope_share(searched: int) -> SearchShare:
    """Each searched Scope's share of the prepare's postings and ranked terms."""
    n = max(searched, 1)
    postings = max(MIN_SCOPE_POSTINGS, min(POSTING_BUDGET, PREPARE_POSTING_BUDGET // n))
    return SearchShare(postings, max(MIN_SCOPE_TERMS, min(MAX_RANKED_TERMS, PREPARE_RANKED_TERMS // n)))
