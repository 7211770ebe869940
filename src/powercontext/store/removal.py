"""What real deletion leaves and reports: a purged Artifact's tombstone, and what deleting a Scope removed."""

from __future__ import annotations

from dataclasses import dataclass

from powercontext.domain.identity import ArtifactKey

__all__ = ["DeletedScope", "PurgedArtifact"]


@dataclass(frozen=True, slots=True)
class PurgedArtifact:
    """The tombstone a purge leaves: which Artifact (its head revision's key), how many revisions were erased,
    and when."""

    key: ArtifactKey
    revisions: int
    purged_at: str


@dataclass(frozen=True, slots=True)
class DeletedScope:
    """What deleting a Scope removed: its Artifacts, Sources and code chunks, and the Scopes that referenced it
    (their references no longer name it)."""

    scope_id: str
    artifacts: int
    sources: int
    code_chunks: int
    referenced_by: tuple[str, ...]
