"""Redact what looks like a secret before a Source is stored, and say what was redacted (never the secret).

The detection is the ``detect-secrets`` package's (a maintained secret scanner): its pattern detectors (cloud and
API keys, tokens, JWTs, private keys, passwords in URLs) run over the whole text, and its keyword detector
(``password = "…"``, ``api_key: …``) over each line. Its two entropy detectors are left out on purpose: in
conversation text they mostly flag commit hashes and digests, which a memory must keep. Only the extent is ours:
a private key's header line is where the scanner stops, so the whole ``BEGIN … END`` block is redacted, and of a
URL's ``user:password@`` only the password is. A secret found once is redacted wherever else it occurs.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.base import BasePlugin, RegexBasedDetector
from detect_secrets.settings import default_settings

# Heuristics, not detectors: entropy flags hashes and ids; a public IP address is not a secret.
_LEFT_OUT = frozenset({"Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector"})
_PRIVATE_KEY = "Private Key"
_IN_URL = "Basic Auth Credentials"  # its pattern spans ``://user:password@``; only the password (group 1) goes
_KEY_BLOCK_END = re.compile(r"-----END[ A-Z0-9]*PRIVATE KEY[ A-Z0-9]*-----")
_FILENAME = "source.txt"  # the keyword detector's rules depend on a file type; plain text is the closest


@dataclass(frozen=True, slots=True)
class Redacted:
    """The text to store, and how many secrets of each detector type were replaced (empty: none)."""

    text: str
    counts: tuple[tuple[str, int], ...]


@lru_cache(maxsize=1)
def _detectors() -> tuple[tuple[RegexBasedDetector, ...], tuple[BasePlugin, ...]]:
    """The pattern detectors (run over the whole text) and the others (run line by line)."""
    patterns: list[RegexBasedDetector] = []
    lines: list[BasePlugin] = []
    classes: list[type[BasePlugin]] = list(get_mapping_from_secret_type_to_class().values())
    for plugin_class in classes:
        if plugin_class.__name__ in _LEFT_OUT:
            continue
        plugin = plugin_class()
        if isinstance(plugin, RegexBasedDetector):
            patterns.append(plugin)
        else:
            lines.append(plugin)
    return tuple(patterns), tuple(lines)


def _pattern_spans(text: str) -> Iterator[tuple[int, int, str]]:
    patterns, _ = _detectors()
    for plugin in patterns:
        for pattern in plugin.denylist:
            for match in pattern.finditer(text):
                start, end = match.span(1) if plugin.secret_type == _IN_URL else match.span()
                if plugin.secret_type == _PRIVATE_KEY:
                    block_end = _KEY_BLOCK_END.search(text, end)
                    end = block_end.end() if block_end else len(text)
                if end > start:
                    yield start, end, plugin.secret_type


def _line_spans(text: str) -> Iterator[tuple[int, int, str]]:
    _, others = _detectors()
    offset = 0
    with default_settings():
        for number, line in enumerate(text.splitlines(keepends=True), 1):
            for plugin in others:
                for found in plugin.analyze_line(filename=_FILENAME, line=line, line_number=number):
                    value = found.secret_value or ""
                    at = line.find(value) if value else -1
                    if at >= 0:
                        yield offset + at, offset + at + len(value), found.type
            offset += len(line)


def _repeats(text: str, found: set[tuple[int, int, str]]) -> set[tuple[int, int, str]]:
    """Every other occurrence of a secret a detector found (a password in a URL, repeated in prose)."""
    extra: set[tuple[int, int, str]] = set()
    for start, end, kind in found:
        value = text[start:end]
        if len(value) < 6 or "\n" in value:  # a short value would redact ordinary words
            continue
        at = text.find(value)
        while at >= 0:
            extra.add((at, at + len(value), kind))
            at = text.find(value, at + 1)
    return extra


def redact(text: str) -> Redacted:
    """``text`` with every detected secret replaced by ``[redacted: <type>]``; overlapping finds become one."""
    found = {*_pattern_spans(text), *_line_spans(text)}
    if not found:
        return Redacted(text, ())
    spans = sorted(found | _repeats(text, found))
    merged: list[tuple[int, int, str]] = []
    for start, end, kind in spans:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], end), last[2])
            continue
        merged.append((start, end, kind))
    parts: list[str] = []
    counts: Counter[str] = Counter()
    cursor = 0
    for start, end, kind in merged:
        parts.append(text[cursor:start])
        parts.append(f"[redacted: {kind}]")
        counts[kind] += 1
        cursor = end
    parts.append(text[cursor:])
    return Redacted("".join(parts), tuple(sorted(counts.items())))
