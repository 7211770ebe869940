"""Lineage as the API shows it: the Sources an exact Atomic Memory revision was written from (never content)."""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.contract.sources import SourceOrigin, SourceRef
from powercontext.domain.identity import ArtifactKey
from powercontext.store import source_records as records


def source_ref_view(ref: records.SourceRef) -> SourceRef:
    origin = SourceOrigin(host=ref.origin.host, session_id=ref.origin.session_id, turn=ref.origin.turn)
    return SourceRef(
        scope_id=ref.scope_id, source_id=ref.source_id, kind=ref.kind, observed_at=ref.observed_at, origin=origin
    )


def lineage_of(store: object, keys: Sequence[ArtifactKey]) -> dict[ArtifactKey, list[SourceRef]]:
    """The wire SourceRefs of these exact revisions (those that have any); none from a store without Sources."""
    if not keys or not isinstance(store, records.SourceStore):
        return {}
    found = store.source_refs(keys)
    return {key: [source_ref_view(ref) for ref in refs] for key, refs in found.items()}
