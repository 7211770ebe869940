"""Which queries an embedding model can read: a model trained on English text alone gives every text in another
script a vector near every other such text, so its vector channel would vouch for anything.

Measured with the local model (all-MiniLM-L6-v2), five unrelated sentences each way: unrelated English pairs
have cosines of -0.02 to 0.15, under the relevance floor of 0.25; the same sentences in Chinese 0.45 to 0.85, over
it ("今天天气怎么样" against "结算任务每天凌晨两点运行。": 0.85). Under the ``auto`` policy such a query is searched by
full text alone (the Receipt's ``fts`` with reason ``none``: RFC 1435's "choosing FTS normally under auto"); a
search that asks for ``vector`` or ``hybrid`` still gets it.
"""

from __future__ import annotations

import re
from typing import Final

from powercontext.text.tokenize import CJK_CHARACTER

# Models trained on English only (a provider's model is not listed: its languages are not known here).
ENGLISH_ONLY: Final = frozenset({"local:all-MiniLM-L6-v2:int8-v1"})
# A word of Latin script (Basic Latin through Latin Extended-B: English and the accented letters of other
# Latin-script languages), a character of a CJK script (a word on its own, or nearly), a word of another script.
_UNITS: Final = re.compile(
    r"(?P<latin>[A-Za-z\u00c0-\u024f]+)"
    rf"|(?P<cjk>{CJK_CHARACTER})"
    r"|(?P<other>[^\W\d_A-Za-z\u00c0-\u024f]+)"
)


def model_reads(model_id: str, text: str) -> bool:
    """False when ``model_id`` was trained on English only and most of the words of ``text`` are in another
    script (Chinese, Japanese, Korean, Cyrillic, ...). Words, not letters: "我们用什么 GraphQL 网关" is a Chinese
    question about one English name (7 letters against 7 characters, but one word against seven)."""
    if model_id not in ENGLISH_ONLY:
        return True
    latin = foreign = 0
    for unit in _UNITS.finditer(text):
        if unit.lastgroup == "latin":
            latin += 1
        else:
            foreign += 1
    return latin >= foreign
