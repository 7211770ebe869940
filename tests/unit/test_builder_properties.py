"""Property tests for the Builder: budget, byte accounting, UTF-8 safe truncation, full accounting."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from powercontext.assembly.builder import (
    MIN_TRUNCATED_BYTES,
    BuilderLimits,
    PreparedContextBuilder,
    interleave,
)
from powercontext.contract.common import Family
from powercontext.domain.candidates import Candidate
from powercontext.domain.identity import ArtifactKey
from tests.support import parse_fragments

FAMILIES: list[Family] = ["atomic-memory", "topic-memory", "experience", "profile"]
KINDS = ["decision", "constraint", "fact", "state", "next-step", "outcome", "note", 'we"ird\\kind']

# Text with multibyte characters (2-, 3- and 4-byte), control characters, quotes, backslashes,
# line/paragraph separators, the ellipsis itself and marker look-alikes.
_alphabet = st.one_of(
    st.characters(codec="utf-8"),
    st.sampled_from(['"', "\\", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "\u2028", "\u2029", "…", "é", "数", "😀"]),
)
_texts = st.one_of(
    st.text(_alphabet, max_size=40),
    st.text(_alphabet, min_size=40, max_size=600),
    st.builds(lambda s, n: s * n, st.text(_alphabet, min_size=1, max_size=8), st.integers(1, 700)),
    st.sampled_from(["", " ", "\n\t ", "\u3000", "END_POWERCONTEXT_PREPARED_CONTEXT_V1"]),
)
_real_keys = st.builds(
    ArtifactKey,
    st.sampled_from(["project:payments", "scope-b", "数据-scope"]),
    st.just("atomic-memory"),
    st.sampled_from([f"am_{i:02d}" for i in range(12)]),  # a small id pool: duplicates are common
    st.integers(1, 3),
)
_keys = st.one_of(st.none(), _real_keys, _real_keys, _real_keys, _real_keys)  # None about 1 in 5


@st.composite
def _candidate(draw: st.DrawFn, family: Family) -> Candidate:
    key = draw(_keys)
    if key is not None and family != "atomic-memory":
        key = ArtifactKey(key.scope_id, family, key.artifact_id, key.revision)
    return Candidate(key, draw(st.sampled_from(KINDS)), draw(_texts))


@st.composite
def _pools(draw: st.DrawFn) -> dict[Family, list[Candidate]]:
    families = draw(st.lists(st.sampled_from(FAMILIES), min_size=1, max_size=3, unique=True))
    return {f: draw(st.lists(_candidate(f), max_size=24)) for f in families}


def _key_of(item: dict[str, object]) -> ArtifactKey:
    c = item["citation"]
    assert isinstance(c, dict)
    a = c["artifact"]
    return ArtifactKey(c["scope_id"], a["family"], a["artifact_id"], a["revision"])


@st.composite
def _custom_limits(draw: st.DrawFn) -> BuilderLimits:
    def caps(low: int, high: int) -> dict[Family, int]:
        chosen = draw(st.lists(st.sampled_from(FAMILIES), unique=True, max_size=4))
        return {f: draw(st.integers(low, high)) for f in chosen}

    return BuilderLimits(
        candidate_limits=caps(0, 20),
        family_limits=caps(0, 10),
        entry_limit=draw(st.integers(0, 16)),
        max_entry_bytes=draw(st.integers(128, 4000)),
    )


_limits = st.one_of(st.just(BuilderLimits()), _custom_limits())


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_pools(), st.integers(min_value=512, max_value=32768), _limits)
def test_builder_invariants(pools: dict[Family, list[Candidate]], max_bytes: int, limits: BuilderLimits) -> None:
    result = PreparedContextBuilder(limits).build(pools, max_bytes)
    context = result.context
    for _, reason in result.omissions:
        event(f"omitted: {reason}")
    if any(item.truncated for item in result.items):
        event("some item truncated")

    # Budget and byte accounting.
    assert context.content_bytes <= max_bytes
    if context.status == "empty":
        assert context.content is None and context.content_bytes == 0
        assert result.items == ()
    else:
        assert context.content is not None
        assert context.content_bytes == len(context.content.encode("utf-8"))
        assert result.items

    # Full accounting: every candidate is selected or in exactly one omission counter.
    n_candidates = sum(len(p) for p in pools.values())
    assert n_candidates == len(result.items) + sum(result.omissions.values())
    assert all(n > 0 for n in result.omissions.values())
    assert result.candidate_counts == {f: len(p) for f, p in pools.items()}
    assert result.dropped_items == sum(
        n for (_, reason), n in result.omissions.items() if reason in ("below_min_bytes", "no_fitting_truncation")
    )

    # Limits.
    assert len(result.items) <= limits.entry_limit
    per_family = Counter(item.ref.family for item in result.items)
    for family, n in per_family.items():
        assert n <= limits.family_limits.get(family, limits.entry_limit)
    assert not any(reason == "family_limit" for (_, reason) in result.omissions) or any(
        len(p) > limits.candidate_limits.get(f, len(p)) or f in limits.family_limits for f, p in pools.items()
    )
    assert len(set(result.origins)) == len(result.origins)

    # Selection follows rank-major interleaving of the admitted pools.
    admitted = {f: p[: limits.candidate_limits.get(f, len(p))] for f, p in pools.items()}
    order = [c for _, c in interleave(admitted)]
    it = iter(order)
    for item in result.items:
        assert any(c.key == item.ref for c in it), "selected items keep candidate order"

    if context.content is None:
        return
    fragments = parse_fragments(context.content)
    assert [_key_of(f.item) for f in fragments] == list(result.origins)
    assert [item.rendered_bytes for item in result.items] == [f.size for f in fragments]
    assert [item.truncated for item in result.items] == [f.item["truncated"] for f in fragments]

    # The first candidate with a given key is the one that was selected.
    first_by_key: dict[ArtifactKey, Candidate] = {}
    for c in order:
        if c.key is not None and c.text.strip():
            first_by_key.setdefault(c.key, c)
    for item, fragment in zip(result.items, fragments, strict=True):
        source = first_by_key[item.ref]
        body = fragment.item["content"]
        assert fragment.item["kind"] == source.kind
        if item.truncated:
            # Never splits a UTF-8 sequence: a true prefix of the source plus the ellipsis.
            assert body.endswith("…")
            prefix = body[: -len("…")]
            assert source.text.startswith(prefix)
            assert len(prefix) < len(source.text)
            assert source.text.encode("utf-8").startswith(prefix.encode("utf-8"))
            assert len(body.encode("utf-8")) >= MIN_TRUNCATED_BYTES
            assert len(body.encode("utf-8")) <= limits.max_entry_bytes
        else:
            assert body == source.text
            assert len(body.encode("utf-8")) <= limits.max_entry_bytes


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.text(_alphabet, min_size=1, max_size=300).filter(str.strip), min_size=1, max_size=8),
    st.integers(min_value=512, max_value=32768),
)
def test_distinct_candidates_are_selected_or_dropped_only_for_budget(texts: list[str], max_bytes: int) -> None:
    pool = [Candidate(ArtifactKey("s", "atomic-memory", f"am_{i}", 1), "fact", t) for i, t in enumerate(texts)]
    result = PreparedContextBuilder().build({"atomic-memory": pool}, max_bytes)
    reasons = {reason for (_, reason) in result.omissions}
    assert reasons <= {"below_min_bytes", "no_fitting_truncation"}
    # With the largest budget, up to eight distinct bodies of at most 1,200 bytes all fit.
    roomy = PreparedContextBuilder().build({"atomic-memory": pool}, 32768)
    assert roomy.origins == tuple(c.key for c in pool)
    assert roomy.omissions == {}
