"""The join: for every expected memory a prepare did not inject, why not.

A Receipt counts omissions per (family, reason) without naming items (it is content-free and bounded),
so the per-item reason is reconstructed from three observations of the same Scope:

* ``pool``: the round-0 candidate list, re-read with the search the Receipt says ran (same mode, same
  depth as the prepare path), in rank order;
* ``deep``: a deeper search of the same Scope and mode, for the rank of items the pool did not hold;
* the Receipt: what was selected, in order, and the omission counts.

The Builder walks the pool in rank order and, once the cap is reached, cuts every further item with
the cap's reason; before that, an unselected item failed the byte budget. A reranker drops items
before the Builder sees them. The reconstruction is checked against the Receipt's counts and marked
``exact: false`` when they disagree (expansion rounds, referenced Scopes, or a changed pipeline).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Miss reasons, in the order the pipeline would lose an item.
NOT_RETRIEVED = "not_retrieved"  # no search of the Scope returns it, even a deep one
OUTSIDE_POOL = "outside_pool"  # retrieved by the deep search, ranked below the prepare's pool depth
RERANK = "rerank_not_selected"  # in the pool; the reranker chose other items
FAMILY_LIMIT = "family_limit"  # in the pool; the section (or family) limit was already reached
ENTRY_LIMIT = "entry_limit"  # in the pool; the combined entry limit was already reached
BYTE_BUDGET = "byte_budget"  # in the pool, before the cap; it did not fit the remaining bytes
DUPLICATE = "duplicate"
UNATTRIBUTED = "unattributed"  # in the pool, but the Receipt's counts leave no reason for it
MISS_REASONS = (NOT_RETRIEVED, OUTSIDE_POOL, RERANK, FAMILY_LIMIT, ENTRY_LIMIT, BYTE_BUDGET, DUPLICATE, UNATTRIBUTED)

_BYTE_REASONS = ("below_min_bytes", "no_fitting_truncation")
_CAP_REASONS = ("family_limit", "entry_limit")


@dataclass(frozen=True, slots=True)
class Miss:
    """One expected memory that was not injected."""

    memory_id: str
    reason: str
    pool_rank: int | None  # 1-based rank in the prepare's candidate pool, None when not in it
    deep_rank: int | None  # 1-based rank in the deep search, None when absent from it


@dataclass(frozen=True, slots=True)
class JoinResult:
    misses: tuple[Miss, ...]
    exact: bool  # the reconstructed pool accounts for exactly the Receipt's selected + omitted counts


def pool_reasons(
    pool: Sequence[str], selected: Sequence[str], omitted: Mapping[str, int], cap: int
) -> tuple[dict[str, str], bool]:
    """The omission reason of every unselected pool item, and whether that matches the Receipt's counts.

    ``omitted`` is the Receipt's atomic-memory omission counts by reason; ``cap`` the number of items the
    Builder may take from this family (the entry limit, or the section limit).
    """
    chosen = set(selected)
    reasons: dict[str, str] = {}
    reranked_out = omitted.get(RERANK, 0)
    cap_reason = next((r for r in _CAP_REASONS if omitted.get(r, 0)), ENTRY_LIMIT)
    # Rank of the item that filled the cap: every unselected item ranked below it was cut by the cap.
    filled_at = None
    taken = 0
    for position, item in enumerate(pool):
        if item in chosen:
            taken += 1
            if taken == cap:
                filled_at = position
                break
    seen: set[str] = set()
    for position, item in enumerate(pool):
        if item in chosen:
            continue
        if item in seen:
            reasons[item] = DUPLICATE
            continue
        seen.add(item)
        if reranked_out:
            reasons[item] = RERANK  # the reranker's choice is not visible per item: all unselected are its
        elif filled_at is not None and position > filled_at:
            reasons[item] = cap_reason
        elif sum(omitted.get(r, 0) for r in _BYTE_REASONS):
            reasons[item] = BYTE_BUDGET
        else:
            reasons[item] = UNATTRIBUTED
    counted = sum(n for r, n in omitted.items() if r != NOT_RETRIEVED)
    exact = len(pool) == len(chosen & set(pool)) + counted and len(chosen - set(pool)) == 0
    if exact and not reranked_out:
        rebuilt: dict[str, int] = {}
        for reason in reasons.values():
            rebuilt[reason] = rebuilt.get(reason, 0) + 1
        wanted = {
            BYTE_BUDGET: sum(omitted.get(r, 0) for r in _BYTE_REASONS),
            cap_reason: sum(omitted.get(r, 0) for r in _CAP_REASONS),
            DUPLICATE: omitted.get(DUPLICATE, 0),
        }
        exact = all(rebuilt.get(r, 0) == n for r, n in wanted.items()) and UNATTRIBUTED not in rebuilt
    return reasons, exact


def join_misses(
    expected: Sequence[str],
    selected: Sequence[str],
    pool: Sequence[str],
    deep: Sequence[str],
    omitted: Mapping[str, int],
    cap: int,
) -> JoinResult:
    """Why each expected id that is not in ``selected`` was not injected."""
    reasons, exact = pool_reasons(pool, selected, omitted, cap)
    chosen = set(selected)
    misses = []
    for memory_id in expected:
        if memory_id in chosen:
            continue
        pool_rank = pool.index(memory_id) + 1 if memory_id in pool else None
        deep_rank = deep.index(memory_id) + 1 if memory_id in deep else None
        if pool_rank is not None:
            reason = reasons.get(memory_id, UNATTRIBUTED)
        elif deep_rank is not None:
            reason = OUTSIDE_POOL
        else:
            reason = NOT_RETRIEVED
        misses.append(Miss(memory_id, reason, pool_rank, deep_rank))
    return JoinResult(tuple(misses), exact)


def what_would_help(reason_counts: Mapping[str, int], mode_counts: Mapping[str, int]) -> dict[str, dict[str, object]]:
    """The aggregate answer: which setting change each group of misses points at."""
    fts_only = set(mode_counts) <= {"fts"}
    return {
        "bigger_budget": {
            "misses": reason_counts.get(BYTE_BUDGET, 0),
            "why": "in the pool and ranked high enough, but the remaining bytes could not hold them",
        },
        "higher_cap": {
            "misses": reason_counts.get(ENTRY_LIMIT, 0) + reason_counts.get(FAMILY_LIMIT, 0),
            "why": "in the pool, ranked below the items that filled the entry or section limit",
        },
        "rerank": {
            "misses": reason_counts.get(ENTRY_LIMIT, 0)
            + reason_counts.get(FAMILY_LIMIT, 0)
            + reason_counts.get(OUTSIDE_POOL, 0),
            "why": "the search found them (in or below the pool); a better order would have injected them",
        },
        "hybrid": {
            "misses": reason_counts.get(NOT_RETRIEVED, 0) + reason_counts.get(OUTSIDE_POOL, 0) if fts_only else 0,
            "why": "never retrieved or ranked too low by full text alone"
            if fts_only
            else "not applicable: vector search already ran",
        },
        "reranker_choice": {
            "misses": reason_counts.get(RERANK, 0),
            "why": "in the pool; the reranker selected other items",
        },
    }
