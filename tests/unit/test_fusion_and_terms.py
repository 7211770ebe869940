"""Hybrid fusion rules and the query-term selection of full-text search (real SQLite store)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from powercontext.inference.config import EmbeddingConfig, build_embedding_provider
from powercontext.search.channels import ChannelSearch
from powercontext.search.embedding import GuardedEmbedder
from powercontext.search.fusion import fuse, fuse_scores
from powercontext.search.relevance import RelevanceFloor
from powercontext.store.base import NewMemory, ScoredMemory
from powercontext.store.sqlite import SqliteStore


@dataclass(frozen=True)
class Hit:
    name: str
    score: float


def names(hits: list[Hit]) -> list[str]:
    return [h.name for h in hits]


def by_name(hit: Hit) -> str:
    return hit.name


def test_score_fusion_keeps_a_confident_top_hit_that_rank_fusion_ties() -> None:
    # Full text is sure of "a" (10 vs 1); the vector channel barely prefers "b" (0.50 vs 0.49).
    fts = [Hit("a", 10.0), Hit("b", 1.0), Hit("c", 0.9)]
    vec = [Hit("b", 0.50), Hit("a", 0.49), Hit("c", 0.48)]
    rrf = fuse([(fts, 1.0), (vec, 1.0)], 60, 3, key_of=by_name)
    assert rrf[0].score == rrf[1].score  # 1/61 + 1/62 both: rank fusion cannot tell them apart
    fused = fuse_scores([(fts, 1.0), (vec, 1.0)], 3, key_of=by_name)
    assert names(fused) == ["a", "b", "c"]
    # a: 1 + (0.49 - 0.48) / 0.02; b: (1 - 0.9) / 9.1 + 1; c: 0 + 0
    assert [round(h.score, 6) for h in fused] == [1.5, round(0.1 / 9.1 + 1.0, 6), 0.0]


def test_score_fusion_weights_missing_items_and_flat_lists() -> None:
    fts = [Hit("a", 3.0), Hit("b", 3.0)]  # all equal: both are this channel's best
    vec = [Hit("c", 0.9), Hit("a", 0.1)]
    fused = fuse_scores([(fts, 1.0), (vec, 2.0)], 10, key_of=by_name)
    # a: 1 + 2 * 0; b: 1 (absent from vector); c: 2 * 1 (absent from fts)
    assert [(h.name, h.score) for h in fused] == [("c", 2.0), ("a", 1.0), ("b", 1.0)]
    assert fuse_scores([([], 1.0), (vec, 1.0)], 1, key_of=by_name) == [Hit("c", 1.0)]
    assert fuse_scores([([], 1.0), ([], 1.0)], 5, key_of=by_name) == []


def test_a_store_repeat_scores_once_and_stays_in_the_answer_for_the_receipt() -> None:
    """A list holding an identity twice is a store's repeat: it must not double that hit's score, and the
    repeat must reach the assembler, which reports it as an omitted duplicate."""
    fts = [Hit("a", 5.0), Hit("a", 5.0), Hit("b", 4.5), Hit("c", 1.0)]
    vec = [Hit("b", 0.9), Hit("a", 0.5), Hit("c", 0.1)]
    fused = fuse_scores([(fts, 1.0), (vec, 1.0)], 3, key_of=by_name)
    assert names(fused) == ["b", "a", "a", "c"]  # b: 0.875 + 1.0; a: 1.0 + 0.5 (counted twice it would lead)
    assert fused[1] == fused[2]


def test_score_fusion_maps_each_channel_by_the_range_of_the_list_it_read() -> None:
    # The vector channel read cosines 0.9 .. 0.1; a relevance floor then dropped everything below 0.5.
    fts = [Hit("a", 8.0), Hit("b", 4.0), Hit("c", 0.0)]
    vec = [Hit("b", 0.9), Hit("a", 0.5)]
    floored = fuse_scores([(fts, 1.0), (vec, 1.0)], 3, key_of=by_name)
    # Without the read range the floor's survivor at 0.5 counts as the vector channel's worst (0), so "b" wins.
    assert names(floored) == ["b", "a", "c"]
    read = fuse_scores([(fts, 1.0), (vec, 1.0)], 3, key_of=by_name, ranges=[(0.0, 8.0), (0.1, 0.9)])
    # a: 1 + 0.4 / 0.8 = 1.5; b: 0.5 + 1 = 1.5 (first seen wins the tie); c: 0
    assert [(h.name, round(h.score, 6)) for h in read] == [("a", 1.5), ("b", 1.5), ("c", 0.0)]
    # None for one channel keeps that list's own range.
    assert fuse_scores([(fts, 1.0), (vec, 1.0)], 3, key_of=by_name, ranges=[None, None]) == floored


def test_a_long_query_keeps_a_distinctive_term_beyond_its_first_32(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "t.db")
    store.create_scope("s", "s", ())
    store.create_memories(
        "s",
        [
            NewMemory("The zanzibar gateway signs every payout request.", "fact", ()),
            *(NewMemory(f"Routine note {i} about the weekly sync.", "fact", ()) for i in range(5)),
        ],
    )
    search = ChannelSearch(store.search_text, None, GuardedEmbedder(build_embedding_provider(EmbeddingConfig())))
    # 40 distinct words first (an agent's prompt preamble), the one word that matters last.
    preamble = " ".join(f"word{i}x" for i in range(40))
    outcome = search.search("s", f"{preamble} routine zanzibar", "fts", 3)
    assert outcome.mode == "fts"
    assert "zanzibar" in outcome.hits[0].record.text
    store.close()


def test_a_search_reports_the_hits_its_floor_dropped_apart_from_its_results(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "t.db")
    store.create_scope("s", "s", ())
    store.create_memories(
        "s",
        [
            NewMemory("Kafka retention is seven days on the ingest queue.", "fact", ()),
            NewMemory("The queue dashboard lives in Grafana.", "fact", ()),
            *(NewMemory(f"Queue note {i} about the weekly sync.", "fact", ()) for i in range(8)),
        ],
    )
    search = ChannelSearch(
        store.search_text,
        None,
        GuardedEmbedder(build_embedding_provider(EmbeddingConfig())),
        floor=RelevanceFloor(store.term_statistics),
    )
    outcome = search.search("s", "kafka retention queue", "fts", 16)
    assert [h.record.text for h in outcome.hits] == ["Kafka retention is seven days on the ingest queue."]
    # "queue" alone (in every memory) is below the floor: read, dropped, and reported apart from the results.
    assert len(outcome.below_floor) == 9
    assert all("Kafka" not in h.record.text for h in outcome.below_floor)
    store.close()


def test_hybrid_fusion_weighs_a_full_text_hit_by_the_share_of_the_query_it_covers(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "t.db")
    store.create_scope("s", "s", ())
    store.create_memories(
        "s",
        [
            NewMemory("Zanzibar zanzibar zanzibar zanzibar.", "fact", ()),
            NewMemory("Zanzibar signs each payout in the nightly ledger run, with retries and alerts.", "fact", ()),
            *(NewMemory(f"Payout note {i}.", "fact", ()) for i in range(10)),
        ],
    )
    embedder = GuardedEmbedder(build_embedding_provider(EmbeddingConfig(provider="local")))

    def flat_vectors(scope_id: str, model_id: str, vector: object, limit: int) -> list[ScoredMemory]:
        # Every memory equally close: the vector channel adds the same to each, full text decides the order.
        return [dataclasses.replace(h, score=0.5) for h in store.search_text(scope_id, ["zanzibar"], limit)]

    search = ChannelSearch(store.search_text, flat_vectors, embedder, floor=RelevanceFloor(store.term_statistics))
    assert store.search_text("s", ["zanzibar", "payout"], 1)[0].record.text.startswith("Zanzibar zanzibar")  # BM25: TF
    fused = search.search("s", "zanzibar payout", "hybrid", 2).hits
    # The memory holding both query terms covers more of the query than the one repeating one of them.
    assert fused[0].record.text.startswith("Zanzibar signs")
    store.close()


def test_full_text_orders_its_hits_by_bm25_and_query_coverage_together(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "t.db")
    store.create_scope("s", "s", ())
    store.create_memories(
        "s",
        [
            NewMemory("Zanzibar zanzibar zanzibar zanzibar.", "fact", ()),
            NewMemory(
                "Zanzibar signs each payout in the nightly ledger run, with retries, alerts and a long tail of "
                "words about nothing.",
                "fact",
                (),
            ),
            NewMemory("Zanzibar zanzibar payout.", "fact", ()),
            *(NewMemory(f"Payout note {i}.", "fact", ()) for i in range(10)),
        ],
    )
    terms = ["zanzibar", "payout", "ledger"]
    by_bm25 = [h.record.text[:16] for h in store.search_text("s", terms, 3)]
    assert by_bm25 == ["Zanzibar zanziba", "Zanzibar zanziba", "Zanzibar signs e"]  # term frequency, short texts
    search = ChannelSearch(
        store.search_text,
        None,
        GuardedEmbedder(build_embedding_provider(EmbeddingConfig())),
        floor=RelevanceFloor(store.term_statistics),
    )
    found = search.search("s", "zanzibar payout ledger", "fts", 3).hits
    # The one memory holding all three query terms comes first; the others keep BM25's order.
    assert found[0].record.text.startswith("Zanzibar signs")
    assert [h.record.text for h in found][1:] == ["Zanzibar zanzibar payout.", "Zanzibar zanzibar zanzibar zanzibar."]
    # A deeper search starts with the same hits.
    assert search.search("s", "zanzibar payout ledger", "fts", 3, depth=12).hits[:3] == found
    store.close()
