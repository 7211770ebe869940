"""Hashable exact identities used inside the runtime (the wire form lives in ``contract``)."""

from __future__ import annotations

from dataclasses import dataclass

from powercontext.contract.common import ArtifactAddress, ArtifactRef, Family


@dataclass(frozen=True, slots=True)
class ArtifactKey:
    """Scope-qualified exact revision: the same artifact id in two Scopes is two keys."""

    scope_id: str
    family: Family
    artifact_id: str
    revision: int

    def to_address(self) -> ArtifactAddress:
        return ArtifactAddress(
            scope_id=self.scope_id,
            artifact=ArtifactRef(family=self.family, artifact_id=self.artifact_id, revision=self.revision),
        )

    @classmethod
    def from_address(cls, address: ArtifactAddress) -> ArtifactKey:
        ref = address.artifact
        return cls(address.scope_id, ref.family, ref.artifact_id, ref.revision)
