"""Serialized Receipt sizes of representative payloads, with real identity lengths.

    .venv/bin/python bench/receipt_sizes.py

Each payload is built by the real assembler (``TraceReceiptAssembler``) from a trace and a build of the
stated shape, and measured as the validator measures it (compact UTF-8 JSON, the exact bytes returned).
Identity lengths: 64-character Scope ids, the Server's 29-character artifact ids, 64-hex fingerprints and
hashes, 80-character repository paths, model ids like ``openai-compatible:gpt-4o-mini-2024-07-18``, custom
Prompt Artifacts. Stage timings carry three decimals, as on the wire. The bound this sets is the largest
representative payload plus 10 %, rounded up to a whole KiB (``contract/receipt.py``: ``MAX_RECEIPT_BYTES``).
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from dataclasses import dataclass

from powercontext.assembly.builder import BuiltItem, PreparedContextBuild
from powercontext.contract.common import ArtifactAddress, ArtifactRef, CodeEvidenceRef, Family
from powercontext.contract.prepare import PreparedContext
from powercontext.contract.receipt import MAX_RECEIPT_BYTES
from powercontext.domain.identity import ArtifactKey
from powercontext.prompts.definitions import ResolvedPrompt, compiled_digest
from powercontext.recall.rerank import RerankConfigRecord
from powercontext.recall.trace import RecallTrace, StageSample
from powercontext.receipt.assembler import ReceiptEvidence, TraceReceiptAssembler

HEADROOM = 1.10
MODEL = "openai-compatible:gpt-4o-mini-2024-07-18"


def scope_id(i: int) -> str:
    return f"org:acme-payments/team:ledger-platform/project:settlement-{i:03d}".ljust(64, "x")[:64]


def artifact_id(prefix: str, i: int) -> str:
    return prefix + hashlib.sha256(f"{prefix}{i}".encode()).hexdigest().upper()[:26]


def digest(seed: str) -> str:
    return "sha256:" + hashlib.sha256(seed.encode()).hexdigest()


@dataclass(frozen=True)
class Shape:
    name: str
    scopes: int
    atomic: int
    topic: int
    profile: int
    experience: int
    code: int
    rerank_scopes: int  # Scopes whose pool was reranked, each with its own custom Prompt
    rounds: int


def custom_prompt(sid: str) -> ResolvedPrompt:
    address = ArtifactAddress.model_construct(
        scope_id=sid, artifact=ArtifactRef.model_construct(family="prompt", artifact_id="memory.rerank", revision=12)
    )
    text = f"custom rerank guidance of {sid}"
    compiled = compiled_digest("memory.rerank", 1, text)
    return ResolvedPrompt(sid, "memory.rerank", 1, 1, "artifact", 12, compiled, address, text)


def build_for(shape: Shape) -> tuple[RecallTrace, PreparedContextBuild]:
    scopes = [scope_id(i) for i in range(shape.scopes)]
    items: list[BuiltItem[ArtifactKey]] = []
    families: list[tuple[Family, str, int]] = [
        ("atomic-memory", "am_", shape.atomic),
        ("topic-memory", "tm_", shape.topic),
        ("profile", "pf_", shape.profile),
        ("experience", "ex_", shape.experience),
    ]
    for family, prefix, count in families:
        for i in range(count):
            key = ArtifactKey(scopes[i % len(scopes)], family, artifact_id(prefix, i), 1 + i % 12)
            items.append(BuiltItem(key, 900 + i, i == 0))
    code = [
        BuiltItem(
            CodeEvidenceRef(
                scope_id=scopes[0],
                fingerprint=hashlib.sha256(b"repo").hexdigest(),
                path=f"services/settlement/src/settlement/reconciliation/adapters/ledger_writer_{i}.py".ljust(80, "_"),
                file_sha256=digest(f"file{i}"),
                start_line=1200 + i,
                end_line=1260 + i,
                snippet_sha256=digest(f"snippet{i}"),
            ),
            1800,
            i == 3,
        )
        for i in range(shape.code)
    ]
    requested: tuple[Family, ...] = tuple(f for f, _, n in families if n) + (("code",) if shape.code else ())
    trace = RecallTrace(requested_families=requested)
    for r in range(shape.rounds):
        trace.record_round(r, "completed", True)
        for family, _, count in families:
            if (count and family != "profile") or (family == "profile" and r == 0 and count):
                trace.record_search(r, family, "hybrid", "completed", "none")
                fallback = "inference_timeout" if r == 0 else "reused_fts_fallback"
                trace.record_search(r, family, "fts", "completed", fallback)
    if shape.code:
        trace.record_search(0, "code", "code", "completed", "none")
    for i in range(shape.rerank_scopes):
        config = RerankConfigRecord(
            "powercontext.memory.rerank.listwise.v1",
            MODEL,
            {"candidate_limit": 30, "max_output_tokens": 256, "seed": 7, "temperature": 0.0, "top_p": 1.0},
            10.0,
            8,
            custom_prompt(scopes[i]),
            True,
        )
        trace.record_rerank(shape.rounds - 1, config, "selected", "none")
    stages = ["scope.context", "memory.search", "topic_memory.search", "experience.search", "profile.read"]
    stages += ["code.query", "recall.expand", "context.build"]
    trace.stages.extend(StageSample(s, 1234.567) for s in stages)
    omissions = {
        (f, reason): 11
        for f, _, n in families
        if n
        for reason in ("duplicate", "family_limit", "entry_limit")
    }
    if shape.rerank_scopes:
        trace.omit("atomic-memory", "rerank_not_selected", 40)
    content = "x" * 100
    build = PreparedContextBuild(
        PreparedContext(status="ready", content=content, content_bytes=len(content)),
        tuple(items),
        tuple(code),
        omissions,  # type: ignore[arg-type]
        {f: n for f, _, n in families if n},
    )
    return trace, build


SHAPES = [
    Shape("8 Atomic Memories, one Scope (default recall)", 1, 8, 0, 0, 0, 0, 0, 1),
    Shape("18 historical (8 + 6 Topic + 2 Profile + 2 Experience), two Scopes", 2, 8, 6, 2, 2, 0, 0, 1),
    Shape("26 historical (8 + 8 + 8 Profiles + 2), eight Scopes", 8, 8, 8, 8, 2, 0, 0, 1),
    Shape("26 historical + 4 code, eight Scopes", 8, 8, 8, 8, 2, 4, 0, 1),
    Shape("26 historical + 4 code, eight Scopes, 2 rerank configs with custom Prompts", 8, 8, 8, 8, 2, 4, 2, 1),
    Shape("the same after 2 expansion rounds", 8, 8, 8, 8, 2, 4, 2, 3),
]


def measure(shape: Shape) -> int:
    trace, build = build_for(shape)
    evidence = ReceiptEvidence("0f3c2a9e-5b1d-4c8e-9a7f-2d6b8e1c4f30", "q", 32768, trace, build)
    data = TraceReceiptAssembler().receipt_data(evidence)
    return len(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def main() -> int:
    sizes = [(shape.name, measure(shape)) for shape in SHAPES]
    largest = max(size for _, size in sizes)
    bound = math.ceil(largest * HEADROOM / 1024) * 1024
    print("| payload | Receipt bytes |\n| --- | ---: |")
    for name, size in sizes:
        print(f"| {name} | {size:,} |")
    print(f"\nlargest {largest:,} bytes; with 10% headroom, rounded up to a KiB: {bound:,} bytes")
    status = "fits" if bound <= MAX_RECEIPT_BYTES else "TOO SMALL"
    print(f"configured MAX_RECEIPT_BYTES: {MAX_RECEIPT_BYTES:,} ({status})")
    return 0 if bound <= MAX_RECEIPT_BYTES else 1


if __name__ == "__main__":
    sys.exit(main())
