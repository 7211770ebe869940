"""Hashable exact identities used inside the runtime (the wire form lives in ``contract``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from powercontext.contract.common import ArtifactAddress, ArtifactFamily, ArtifactRef, CodeEvidenceRef, Family


@dataclass(frozen=True, slots=True)
class ArtifactKey:
    """Scope-qualified exact revision: the same artifact id in two Scopes is two keys."""

    scope_id: str
    family: Family | ArtifactFamily  # "prompt" is an Artifact family that prepare never reads
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


class CodeRange(Protocol):
    """Anything that names an exact code range: an index hit, a snippet read, a Builder candidate."""

    @property
    def scope_id(self) -> str: ...
    @property
    def fingerprint(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def file_sha256(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def snippet_sha256(self) -> str: ...


@dataclass(frozen=True, slots=True)
class CodeRangeText:
    """An exact code range (a ``CodeRange``) and its ``text``: exactly lines ``start_line..end_line``, each with
    its line terminator. The base of an index hit, a snippet read and a Builder candidate."""

    scope_id: str
    fingerprint: str
    path: str
    file_sha256: str
    start_line: int
    end_line: int
    snippet_sha256: str
    text: str


def code_evidence_ref(code: CodeRange) -> CodeEvidenceRef:
    """The wire identity of a code range: ``CodeRange`` names exactly the wire model's fields, read by name."""
    return CodeEvidenceRef.model_validate(code, from_attributes=True)
