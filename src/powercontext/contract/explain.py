"""``POST /v1/context/explain``: why each candidate of one prepare was selected or omitted (diagnostic only).

The answer carries identities, ranks, scores, matched query terms and fates, never an item's text: bodies are
read through the ordinary exact-read routes under the caller's own grant.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, StrictBool, StrictFloat, StrictInt

from powercontext.contract.common import (
    ArtifactAddress,
    ArtifactId,
    CodeEvidenceRef,
    Family,
    StrictModel,
    require_constants,
)
from powercontext.contract.prepare import PrepareContextRequest, PreparedContext
from powercontext.contract.receipt import OmissionReason
from powercontext.contract.sources import SourceRef

EXPLANATION_SCHEMA: Final = "powercontext.context-explanation.v1"
MAX_EXPECTED = 16

Channel = Literal["fts", "vector", "fused"]


class ExplainContextRequest(PrepareContextRequest):
    """The prepare request, plus the Artifact ids the caller expected to see injected."""

    expected: list[ArtifactId] = Field(
        default_factory=list,
        max_length=MAX_EXPECTED,
        description="Artifact ids the caller expected; each is located in this run, else by a deeper search.",
    )


class ChannelRank(StrictModel):
    """An item's place in one ranked list of one search: rank 1 is best."""

    round: StrictInt = Field(ge=0, le=2)
    scope_id: str
    channel: Channel = Field(description="fts (BM25), vector (cosine), or fused (the list the pool was cut from).")
    rank: StrictInt = Field(ge=1)
    score: StrictFloat


class Fate(StrictModel):
    """``selected`` at ``position`` (1-based, injection order), ``omitted`` with the Receipt's reason, or
    ``not_retained``: found only by an expansion ``round`` the prepare abandoned (explain only; the Receipt
    counts no omission for it, since an abandoned round's pool never reaches the build)."""

    outcome: Literal["selected", "omitted", "not_retained"]
    position: StrictInt | None = Field(default=None, ge=1)
    rendered_bytes: StrictInt | None = Field(default=None, ge=0)
    truncated: StrictBool = False
    reason: OmissionReason | None = None
    round: StrictInt | None = Field(
        default=None, ge=1, le=2, description="not_retained: the expansion round whose pool held it (retained=false)."
    )


class ExplainedCandidate(StrictModel):
    family: Family
    artifact_address: ArtifactAddress | None = Field(default=None, description="Exact revision (not for code).")
    code_evidence: CodeEvidenceRef | None = Field(default=None, description="The indexed range (code only).")
    rank: StrictInt = Field(ge=1, description="Place in its family's pool, in the order the Builder met it.")
    ranks: list[ChannelRank] = Field(description="Every ranked list of this run that held it.")
    bm25: StrictFloat | None = Field(default=None, description="Full-text score of its best round (higher is better).")
    cosine: StrictFloat | None = Field(default=None, description="Vector similarity of its best round.")
    fused: StrictFloat | None = Field(
        default=None,
        description="Score of the list its pool was cut from: the fusion score when two channels ran (for code, "
        "reciprocal-rank fusion, sum of 1/(k + rank)), else the one channel's own score.",
    )
    matched_terms: list[str] = Field(
        description="Query terms its text contains: stemmed index terms (query_terms), or for code the identifier "
        "and path terms (code_query_terms) of its range."
    )
    defines_query_identifier: StrictBool | None = Field(
        default=None,
        description="Code only: the range defines an identifier the query names, so the code search put it ahead "
        "of ranges that only use it (its rank can be above ranges with a higher fused score).",
    )
    fate: Fate
    expected: StrictBool = False
    source_refs: list[SourceRef] = Field(
        default_factory=list,
        description="Atomic Memory: the Sources this revision was written from (host, session, time; never content).",
    )


class ExpectedItem(StrictModel):
    """Where one expected id landed."""

    artifact_id: ArtifactId
    where: Literal["candidate", "below_pool", "deeper_search", "not_found"] = Field(
        description="candidate: in this run's pool (see its fate); below_pool: in a channel list of this run but "
        "under the pool depth; deeper_search: only a deeper search ranked it; not_found: no searched Scope's active "
        "heads ranked it for this query."
    )
    family: Family | None = None
    ranks: list[ChannelRank] = Field(default_factory=list)
    pool_depth: StrictInt | None = Field(default=None, ge=0, description="The family's per-Scope pool depth.")
    fate: Fate | None = Field(default=None, description="For a candidate: its fate in this run.")
    explanation: str


class FamilySummary(StrictModel):
    family: Family
    pool_depth: StrictInt = Field(ge=0)
    candidates: StrictInt = Field(ge=0)


class FloorReading(StrictModel):
    """One measure of a dropped hit against its relevance floor (docs/evaluation.md says how each was set)."""

    measure: Literal["query_idf_share", "matched_idf", "cosine"] = Field(
        description="query_idf_share: the share of the query's IDF mass the hit holds; matched_idf: that IDF mass "
        "in nats; cosine: vector similarity. A full-text hit is kept when either of its measures reaches its floor."
    )
    value: StrictFloat
    floor: StrictFloat


class BelowFloorHit(StrictModel):
    """A hit a search channel found but did not retrieve, because it is too weakly related to the query."""

    artifact_address: ArtifactAddress
    round: StrictInt = Field(ge=0, le=2)
    channel: Literal["fts", "vector"]
    readings: list[FloorReading]


class ContextExplanation(StrictModel):
    """One prepare's candidates and their fates; ``prepared`` is exactly what that prepare returned."""

    model_config = StrictModel.model_config | {"json_schema_extra": require_constants("schema")}
    schema_: Literal["powercontext.context-explanation.v1"] = Field(default=EXPLANATION_SCHEMA, alias="schema")
    prepared: PreparedContext
    query_terms: list[str] = Field(description="The stemmed terms full-text search used for this query.")
    code_query_terms: list[str] = Field(
        default_factory=list,
        description="The identifier terms the code search used (empty when code was not searched).",
    )
    families: list[FamilySummary]
    candidates: list[ExplainedCandidate]
    expected: list[ExpectedItem]
    below_floor: list[BelowFloorHit] = Field(
        default_factory=list,
        description="Hits each channel dropped below its relevance floor (never candidates, never in the Receipt).",
    )
