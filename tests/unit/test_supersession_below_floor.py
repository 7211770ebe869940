"""Hits a relevance floor dropped enter the pool only as the successor of a hit it kept (recall/supersession.py)."""

from __future__ import annotations

from dataclasses import dataclass

from powercontext.recall.supersession import newer_first


@dataclass(frozen=True)
class Hit:
    text: str
    observed: str


KEPT = Hit("Prod runs on EKS 1.29 (cluster ledger-prod) in eu-west-1 across three zones.", "2024-09-01")
OTHER = Hit("Staging cluster is a smaller copy of prod with spot nodes.", "2024-10-01")
SUCCESSOR = Hit("EKS on the ledger-prod cluster upgraded from 1.29 to 1.30 in eu-west-1.", "2025-07-16")
UNRELATED_CHANGE = Hit("Payout batches now run at 02:00 instead of 04:00.", "2025-08-01")


def order(hits: list[Hit], limit: int, below: list[Hit]) -> list[str]:
    found = newer_first(hits, limit, lambda h: h.observed, lambda h: h.text, successors_only=below)
    return [h.text[:12] for h in found]


def test_a_dropped_statement_of_change_enters_above_the_kept_hit_it_replaces() -> None:
    assert order([KEPT, OTHER], 16, [UNRELATED_CHANGE, SUCCESSOR]) == [
        SUCCESSOR.text[:12],
        KEPT.text[:12],
        OTHER.text[:12],
    ]


def test_a_dropped_hit_that_replaces_nothing_kept_stays_out() -> None:
    assert order([OTHER], 16, [UNRELATED_CHANGE]) == [OTHER.text[:12]]


def test_nothing_kept_means_nothing_enters_from_below_the_floor() -> None:
    # A query nothing answers stays empty: a successor needs a kept hit to succeed.
    assert order([], 16, [SUCCESSOR, UNRELATED_CHANGE]) == []


def test_a_chinese_statement_of_change_moves_above_what_it_replaces() -> None:
    older = Hit("分析数据库用 ClickHouse，按天分区。", "2024-03-01")
    newer = Hit("分析数据库已迁移到 Apache Doris，按天分区。", "2025-02-01")
    found = newer_first([older, newer], 16, lambda h: h.observed, lambda h: h.text)
    assert [h.text for h in found] == [newer.text, older.text]
