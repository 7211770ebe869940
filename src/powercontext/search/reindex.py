"""Embeds active heads that have no vector from the configured model (new provider, or a changed model)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from powercontext.search.embedding import GuardedEmbedder
from powercontext.store.base import Store


@dataclass(frozen=True)
class ReindexReport:
    embedded: int
    remaining: int  # still without a current vector (e.g. revised while this ran); a rerun picks them up


def reindex(
    store: Store,
    embedder: GuardedEmbedder,
    *,
    batch_size: int = 64,
    progress: Callable[[int, int], None] | None = None,
) -> ReindexReport:
    """Embed the backlog in rowid order, one transaction per batch, so an interruption loses at most a batch.

    Raises the provider's ``InferenceError`` after committing every batch before it.
    """
    model_id = embedder.model_id
    status = store.embedding_status(model_id)
    total = status.active_heads - status.current_model
    done = 0
    after = 0
    if progress:
        progress(0, total)
    while True:
        tasks = store.embedding_backlog(model_id, after, batch_size)
        if not tasks:
            break
        vectors = embedder.embed([t.text for t in tasks])
        done += store.write_embeddings(model_id, [(t, vectors[i]) for i, t in enumerate(tasks)])
        after = tasks[-1].rowid
        if progress:
            progress(done, total)
    final = store.embedding_status(model_id)
    return ReindexReport(done, final.active_heads - final.current_model)
