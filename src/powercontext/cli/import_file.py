"""The file ``powercontext memory import`` reads: JSONL, one memory a line, every line checked before anything is sent.

A bad file is refused whole (exit 1, "nothing was imported") naming its first few bad lines, so that a run never
stops half-way on something the file itself could have said: a line that is not a memory, bytes that are not UTF-8,
or two lines that give one ``idempotency_key`` to different memories (the Server would refuse the second one's
batch as ``idempotency-conflict`` after the earlier batches were stored, and again on every re-run).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from powercontext.cli.common import fail

if TYPE_CHECKING:
    from powercontext.contract.memory import AtomicMemoryCreate

MAX_NAMED = 5  # bad lines named in one refusal
_BOM = "\ufeff"  # written at the start of UTF-8 text by some Windows tools; not part of the first line


def read_import_file(file: Path) -> list[AtomicMemoryCreate]:
    """Every non-blank line of ``file`` as a memory with its idempotency key; exits with code 1 naming the first
    ``MAX_NAMED`` bad lines, before anything is sent."""
    from pydantic import ValidationError

    from powercontext.contract.memory import AtomicMemoryCreate
    from powercontext.contract.messages import describe_error

    content = file.read_bytes()
    file_key = hashlib.sha256(content).hexdigest()
    try:
        text = content.decode("utf-8").removeprefix(_BOM)
    except UnicodeDecodeError as exc:
        raise fail(f"invalid-import-file: {file}: {where_undecodable(content, exc)}; nothing was imported") from None
    accepted = [f.alias or name for name, f in AtomicMemoryCreate.model_fields.items()]
    items: list[AtomicMemoryCreate] = []
    bad: list[tuple[int, str]] = []
    first_of_key: dict[str, tuple[int, bytes]] = {}  # idempotency key -> (its first line, its memory's digest)
    # Split on "\n" only: JSON strings may hold U+2028 and other characters str.splitlines() breaks on.
    for number, line in enumerate(text.split("\n"), start=1):
        if len(bad) > MAX_NAMED or not line.strip():
            continue
        try:
            item = AtomicMemoryCreate.model_validate_json(line)
        except ValidationError as exc:
            error = exc.errors()[0]
            what = describe_error(error, accepted).removeprefix("body: ")
            if error["type"] == "json_invalid":
                what = json_problem(line, str(error.get("ctx", {}).get("error", "")))
            bad.append((number, what))
            continue
        if item.idempotency_key is None:
            item = item.model_copy(update={"idempotency_key": import_key(file_key, number)})
        repeated = repeated_key(item, number, first_of_key)
        if repeated is not None:
            bad.append((number, repeated))
        items.append(item)
    if bad:
        raise fail(refusal(file, bad))
    return items


def repeated_key(item: AtomicMemoryCreate, number: int, first_of_key: dict[str, tuple[int, bytes]]) -> str | None:
    """What is wrong when ``item`` reuses an earlier line's key for another memory (None: a new key, or the same
    memory again, which the Server answers as already stored)."""
    assert item.idempotency_key is not None
    body = json.dumps(item.model_dump(mode="json", exclude={"idempotency_key"}), sort_keys=True)
    digest = hashlib.sha256(body.encode("utf-8")).digest()
    first = first_of_key.setdefault(item.idempotency_key, (number, digest))
    if first[1] == digest:
        return None
    return f"idempotency_key is line {first[0]}'s, with a different memory (one key names one memory)"


def json_problem(line: str, detail: str) -> str:
    """Why a line is not JSON pydantic reads: a lone surrogate escape (JSON to Python's parser, but not text),
    else the parser's own words, its column being on this one line."""
    try:
        parsed = json.loads(line)
        json.dumps(parsed, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return "a \\uD800-\\uDFFF escape that is not half of a surrogate pair (a lone surrogate is not text)"
    except (ValueError, RecursionError):
        pass
    detail = detail.replace(" at line 1 column ", " at column ")
    return f"not a JSON object on one line ({detail})" if detail else "not a JSON object on one line"


def refusal(file: Path, bad: list[tuple[int, str]]) -> str:
    """The error: the first bad line as before, then up to ``MAX_NAMED - 1`` more, one a line."""
    (number, what), *more = bad
    lines = [f"invalid-import-file: {file}:{number}: {what}; nothing was imported"]
    lines += [f"  also {file}:{n}: {w}" for n, w in more[: MAX_NAMED - 1]]
    if len(more) >= MAX_NAMED:
        lines.append(f"  (only the first {MAX_NAMED} bad lines are named)")
    return "\n".join(lines)


def where_undecodable(raw: bytes, exc: UnicodeDecodeError) -> str:
    """``line L, byte B of the line (offset O in the file)`` for the first bytes that are not UTF-8 (all 1-based
    but the file offset, which is 0-based as ``cmp`` and ``xxd`` count)."""
    line_start = raw.rfind(b"\n", 0, exc.start) + 1
    line = raw.count(b"\n", 0, exc.start) + 1
    return f"not UTF-8 at line {line}, byte {exc.start - line_start + 1} of the line (offset {exc.start} in the file)"


def import_key(file_sha256: str, line_number: int) -> str:
    """The idempotency key of line ``line_number`` of a file whose content has this SHA-256 (hex)."""
    return f"import:{file_sha256}:{line_number}"
