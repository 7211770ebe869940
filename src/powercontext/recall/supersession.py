"""Newer first when memories disagree: a re-ordering step over one Scope's ranked Atomic Memory hits.

Project notes go stale: "we deploy on Fridays" is followed months later by "deploys moved to Tuesdays", and
full-text ranking often puts the older note first (it tends to restate the subject more fully). The rule:
a hit *B* supersedes a hit *A* ranked above it when

* B was observed later than A (``observed_at``; ties never supersede),
* B says that something changed (one of ``CHANGE_MARKERS``: "now", "moved", "replaced", "from … to", …; "now
  also" adds rather than replaces, so it does not count), and
* A and B cover the same subject: the distinctive terms they share carry at least ``SUBJECT_OVERLAP`` of the
  weight of the smaller one's terms, with at least ``MIN_SHARED_TERMS`` shared. A term's weight is its rarity
  within the hits being ordered (log inverse frequency), so words every hit shares (the query's own) count
  little and a shared version number, product or person counts a lot.
  When the search used vectors, two statements with at least ``MIN_SHARED_TERMS`` shared terms also cover the
  same subject when one is the other's nearest neighbour among the hits by their stored embeddings and their
  cosine stands ``NEAR_SPREADS`` standard deviations above the mean of the hits' pairs (a paraphrased
  replacement shares few words with what it replaces).

Then B moves to just above A. Nothing is removed: every hit keeps its place relative to the others, and a
successor found beyond the requested depth is added (up to ``MAX_PULLED`` of them), so the caller's pool only
grows. A query that asks for history ("originally", "used to", "previously", …) or for a reason ("why": the
rationale lives in the statement that made the decision, not in later ones) is left as ranked; "before", "first",
"old" and "earlier" ask for history only in a past-tense sentence ("what did we use before?") or closing a clause,
not in "before it escalates" or "my first on-call week".

The thresholds were derived on the project-memory evaluation suite; docs/evaluation.md has the ablation.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import chain
from typing import Final, TypeVar

import numpy as np
import numpy.typing as npt

from powercontext.text.tokenize import term_set

SUBJECT_OVERLAP: Final = 0.25
MIN_SHARED_TERMS: Final = 2
# How deep the search looks for successors of the hits it returns (twice the Atomic Memory pool).
SEARCH_DEPTH_FACTOR: Final = 2
MAX_PULLED: Final = 4
MIN_POOL: Final = 16
# With vectors, two statements that share at least ``MIN_SHARED_TERMS`` terms also cover the same subject when one
# is the other's nearest neighbour in the hit list and their cosine stands ``NEAR_SPREADS`` standard deviations
# above the mean cosine of the list's pairs: a rank and a standard score, not a cosine, so no model's scale is
# built in (a fixed cosine that worked for one model, 0.65, was measured too; docs/evaluation.md).
NEAR_SPREADS: Final = 3.0

CHANGE_MARKERS: Final = re.compile(
    r"\b(now(?! also| too)|no longer|instead|replac(?:ed|es|ing)|mov(?:ed|es)|switched|migrat(?:ed|ing)|upgraded|"
    r"bumped|raised|lowered|reduced|increased|extended|shortened|changed|went from|from \S+(?: \S+)? to|reverted|"
    r"rolled back|deprecated|removed|retired|dropped|supersed(?:ed|es)|renamed|handed|t(?:ook|akes) over|no more|"
    r"any ?more|as of|since|cancel(?:l)?ed|renewed|started using|going forward)\b"
    # Chinese has no word boundaries: now, changed/switched to, migrated, moved to, no longer, replaced,
    # upgraded, deprecated, took over.
    r"|现在|如今|改为|改成|改用|换成|换为|换到|迁移|迁到|搬到|搬去|转到|转去|不再|取代|替代|替换|升级|弃用|废弃|接手|接管",
    re.IGNORECASE,
)
# Words that ask how things were wherever they stand, and "why" (the reason lives in the statement that decided).
HISTORY_MARKERS: Final = re.compile(
    r"\b(originally|used to|previous(?:ly)?|initially|formerly|historically|history of|back when|at the time|"
    r"in the past|why)\b",
    re.IGNORECASE,
)
# Words that ask for the past only in a sentence about the past ("what did we use before?", "was it different
# at first?") or at a clause's end: "before it escalates", "my first on-call week" or "the old Helm chart" in a
# present-tense request ask about now.
PAST_WORDS: Final = re.compile(r"\b(before|first|earlier|old|older|prior|original)\b", re.IGNORECASE)
_PAST_TENSE: Final = re.compile(r"\b(did|was|were|had)\b", re.IGNORECASE)
_CLAUSE_END: Final = re.compile(r"\b(before|first|earlier|prior)\s*(?:[?!.,;:)]|$)", re.IGNORECASE)
_SENTENCE: Final = re.compile(r"[^.?!;\n]+")
# Function words carry no subject; the rarity weight would discount most of them, but not in a small pool.
_FUNCTION_WORDS: Final = frozenset(
    term
    for word in (  # noqa: SIM905 - a word list reads better as text
        "a an and are as at be been but by can do does for from has have if in into is it its no "
        "not now of on or our so than that the their then there these this to too was we were when where which while "
        "who will with you your all any also after before via per each only still new use used using uses"
    ).split()
    for term in term_set(word)
)

T = TypeVar("T")


def asks_for_history(query: str) -> bool:
    """Whether ``query`` asks how things were, or why, so older statements are what it wants."""
    if HISTORY_MARKERS.search(query) is not None:
        return True
    if PAST_WORDS.search(query) is None:
        return False
    return any(
        PAST_WORDS.search(sentence) is not None
        and (_PAST_TENSE.search(sentence) is not None or _CLAUSE_END.search(sentence) is not None)
        for sentence in _SENTENCE.findall(query)
    )


@lru_cache(maxsize=16_384)
def subject_terms(text: str) -> frozenset[str]:
    """The distinct terms of ``text`` that can name a subject (no function words, no single digits)."""
    return frozenset(t for t in term_set(text) if t not in _FUNCTION_WORDS and not (t.isdigit() and len(t) == 1))


@lru_cache(maxsize=16_384)
def says_something_changed(text: str) -> bool:
    return CHANGE_MARKERS.search(text) is not None


@lru_cache(maxsize=64)
def _rarity(size: int, most: int) -> tuple[float, ...]:
    """The weight of a term found in ``n`` of ``size - 1`` texts, for every ``n`` up to ``most`` (log inverse
    frequency). A table: a list of a given length always weighs terms with the same few values."""
    return tuple(math.log(size / (n + 0.5)) for n in range(most + 1))


Vector = npt.NDArray[np.float32]


def nearest_neighbours(vectors: Sequence[Vector | None]) -> list[frozenset[int]]:
    """For each position, its nearest neighbour in the list when their cosine stands out (``NEAR_SPREADS``);
    empty for a position without a vector, or whose nearest is not that much closer than the list's pairs are."""
    present = [(i, v) for i, v in enumerate(vectors) if v is not None]
    have = [i for i, _ in present]
    found: list[frozenset[int]] = [frozenset()] * len(vectors)
    if len(have) < 3:  # fewer than three pairs have no spread to stand out from
        return found
    matrix = np.stack([v for _, v in present]).astype(np.float32)
    similarity = matrix @ matrix.T
    pairs = similarity[np.triu_indices(len(have), 1)]
    spread = float(pairs.std())
    if spread <= 0.0:
        return found
    bar = float(pairs.mean()) + NEAR_SPREADS * spread
    np.fill_diagonal(similarity, -np.inf)
    # argmax takes the first of equal cosines: the same neighbour on every backend (the vectors are exact bytes).
    for row, i in enumerate(have):
        best = int(np.argmax(similarity[row]))
        if similarity[row, best] >= bar:
            found[i] = frozenset({have[best]})
    return found


class _Subjects:
    """The subject terms of a list of texts, weighted by rarity within that list (and, when given, the nearest
    neighbours of each by vector).

    Frequencies and totals are computed on first use: a list with no possible successor needs none of them."""

    def __init__(self, texts: Sequence[str], near: Sequence[frozenset[int]] | None = None) -> None:
        self.terms = [subject_terms(t) for t in texts]
        self._near = near
        self._frequency: Counter[str] | None = None
        self._weights: tuple[float, ...] = ()
        self._totals: dict[int, float] = {}

    def _weight(self, terms: frozenset[str]) -> float:
        if self._frequency is None:
            self._frequency = Counter(chain.from_iterable(self.terms))
            # In a list of a few texts every shared term would look common; below ``MIN_POOL`` they count as rare.
            self._weights = _rarity(max(len(self.terms), MIN_POOL) + 1, len(self.terms))
        return sum(map(self._weights.__getitem__, map(self._frequency.__getitem__, terms)))

    def _total(self, i: int) -> float:
        total = self._totals.get(i)
        if total is None:
            total = self._totals[i] = self._weight(self.terms[i])
        return total

    def same(self, i: int, j: int) -> bool:
        """Whether texts ``i`` and ``j`` cover the same subject."""
        shared = self.terms[i] & self.terms[j]
        if len(shared) < MIN_SHARED_TERMS:
            return False
        smaller = min(self._total(i), self._total(j))
        if smaller <= 0:
            return False
        overlap = self._weight(shared) / smaller
        if overlap >= SUBJECT_OVERLAP:
            return True
        near = self._near
        return near is not None and (j in near[i] or i in near[j])


def newer_first(
    hits: Sequence[T],
    limit: int,
    observed: Callable[[T], str],
    text: Callable[[T], str],
    vectors: Callable[[], Sequence[Vector | None]] | None = None,
    successors_only: Sequence[T] = (),
) -> list[T]:
    """``hits`` (ranked, possibly deeper than ``limit``) as the first ``limit`` in rank order with each
    one's successors moved just above it; successors found past ``limit`` are added (at most ``MAX_PULLED``).

    ``successors_only`` are hits that may enter only as the successor of one of the first ``limit`` (those the
    search's relevance floor dropped: a statement that something changed often shares a single word with the
    question, but its subject with the statement it replaces). ``vectors`` (the embeddings of ``hits`` then
    ``successors_only``, in that order; asked for only when some hit could be a successor) adds the
    nearest-neighbour test to the subject rule."""
    reach = min(limit, len(hits))
    hits = [*hits, *successors_only]
    texts = [text(h) for h in hits]
    times = [observed(h) for h in hits]
    oldest = min(times[:reach], default="")
    # The only possible successors: statements of change observed after at least one hit they could pass.
    changers = [j for j in range(1, len(hits)) if times[j] > oldest and says_something_changed(texts[j])]
    if not changers:
        return list(hits[:reach])
    subjects = _Subjects(texts, None if vectors is None else nearest_neighbours(vectors()))
    order: list[int] = []
    placed: set[int] = set()
    pulled = 0
    for i in range(reach):
        if i in placed:
            continue
        successors = []
        for j in changers:
            if j <= i or j in placed or times[j] <= times[i] or (j >= reach and pulled >= MAX_PULLED):
                continue
            if subjects.same(i, j):
                successors.append(j)
                pulled += j >= reach
        for j in sorted(successors, key=lambda j: times[j], reverse=True):
            order.append(j)
            placed.add(j)
        order.append(i)
        placed.add(i)
    return [hits[k] for k in order]


def superseded(
    text: str,
    observed: str,
    others: Sequence[T],
    observed_of: Callable[[T], str],
    text_of: Callable[[T], str],
) -> list[T]:
    """Those of ``others`` (e.g. the hits of a search for ``text``) that a statement ``text`` observed at
    ``observed`` supersedes by the same rule as ``newer_first``."""
    if not says_something_changed(text):
        return []
    subjects = _Subjects([text, *(text_of(o) for o in others)])
    return [o for n, o in enumerate(others, start=1) if observed_of(o) < observed and subjects.same(n, 0)]
