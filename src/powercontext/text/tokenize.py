"""Search terms for the full-text index.

Latin-script words are case-folded and stemmed with the Snowball English stemmer (Porter's revised
algorithm: unlike the 1980 original it maps both "deploy" and "deployment" to "deploy"). Other
alphabetic scripts are case-folded only. CJK runs become overlapping character bigrams, so a
two-character Chinese word matches inside a longer unsegmented sentence.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Collection
from functools import lru_cache

from powercontext.text.stopwords import function_words

_WORD = re.compile(r"[^\W_]+")
# Kana, CJK ideographs (with extensions and compatibility forms) and Hangul: scripts written without spaces.
CJK_CHARACTER = r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002fa1f]"
_CJK = re.compile(CJK_CHARACTER + "+")
_LATIN = re.compile(r"^[0-9a-z\u00df-\u024f]+$")
_ASCII_WORD = re.compile(r"[a-z0-9]+")  # ``_WORD`` on ASCII text already lower-cased, without Unicode tables
MAX_QUERY_TERMS = 32

_local = threading.local()


def _stemmer() -> object:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        import Stemmer  # PyStemmer objects are not thread-safe: one per thread.

        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_stemmer().stemWord(word))  # type: ignore[attr-defined]


def _word_terms(word: str, out: list[str]) -> None:
    pos = 0
    for run in _CJK.finditer(word):
        if run.start() > pos:
            _plain_term(word[pos : run.start()], out)
        chars = run.group()
        if len(chars) == 1:
            out.append(chars)
        else:
            out.extend(chars[i : i + 2] for i in range(len(chars) - 1))
        pos = run.end()
    if pos < len(word):
        _plain_term(word[pos:], out)


def _plain(folded: str) -> str:
    return _stem(folded) if _LATIN.match(folded) else folded


def _plain_term(part: str, out: list[str]) -> None:
    out.append(_plain(part.casefold()))


def terms(text: str) -> list[str]:
    """Index terms of ``text`` in order, repeats kept (term frequency matters to BM25)."""
    if text.isascii():  # the common case: no CJK, and ``lower`` is ``casefold``
        return _terms_of_words(_ASCII_WORD.findall(text.lower()))
    if _CJK.search(text) is None:  # no run splitting needed
        return [_plain(word.casefold()) for word in _WORD.findall(text)]
    out: list[str] = []
    for match in _WORD.finditer(text):
        _word_terms(match.group(), out)
    return out


def query_terms(query: str, limit: int = MAX_QUERY_TERMS) -> list[str]:
    """Distinct topic terms of a query, first occurrences first, capped so a huge query stays cheap.

    Function words (``text.stopwords``) are left out: they would match nearly every memory and score it.
    """
    return list(_query_terms(query, limit))


# One prepare asks for the same query's terms once per searched Scope and family (~200 times for a Scope with 64
# references); tokenizing an 8,192-character query each time cost more than all the searches together.
@lru_cache(maxsize=64)
def _query_terms(query: str, limit: int) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for term in _topic_terms(query):
        seen.setdefault(term, None)
        if len(seen) >= limit:
            break
    return tuple(seen)


def _topic_terms(text: str) -> list[str]:
    """``terms(text)`` without function words. A Latin word is judged as written, before stemming: ``owns`` and
    ``owned`` stem to the listed ``own``, but ask about ownership."""
    stop = stop_words()
    out: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group()
        if word.casefold() in stop:
            continue
        found: list[str] = []
        _word_terms(word, found)
        out.extend(term for term in found if not _is_stop_bigram(term, stop))
    return out


def _is_stop_bigram(term: str, stop: frozenset[str]) -> bool:
    """A function word itself (a single CJK character), or a CJK bigram of two (``我们``)."""
    if term in stop and _CJK.fullmatch(term) is not None:
        return True
    return len(term) == 2 and term[0] in stop and term[1] in stop and _CJK.fullmatch(term) is not None


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """The English and Chinese function words as written, case-folded, contractions in their pieces (``don't``:
    ``don``, ``t``)."""
    return frozenset(piece for word in function_words() for piece in _WORD.findall(word.casefold()))


@lru_cache(maxsize=64)
def only_function_words(query: str) -> bool:
    """Whether ``query`` has words and every one of them is a function word (such a query retrieves nothing)."""
    return bool(terms(query)) and not _topic_terms(query)


_TERM_OF_WORD: dict[str, str] = {}  # folded word -> its term; a plain dict lookup is ~10x cheaper than _plain
_MAX_WORDS = 200_000


def term_set(text: str) -> frozenset[str]:
    """The distinct index terms of ``text``: ``set(terms(text))``, with each distinct word stemmed only once."""
    if text.isascii():  # the common case: no CJK, and ``lower`` is ``casefold``
        words = set(_ASCII_WORD.findall(text.lower()))
    elif _CJK.search(text) is not None:
        return frozenset(terms(text))
    else:
        words = set(_WORD.findall(text.casefold()))
    return frozenset(_terms_of_words(words))


def _terms_of_words(words: Collection[str]) -> list[str]:
    """The term of each folded word, in order."""
    known = _TERM_OF_WORD
    try:
        return [known[word] for word in words]
    except KeyError:
        pass
    if len(known) > _MAX_WORDS:  # a bound for adversarial vocabularies; the cache refills from use
        known.clear()
    found: list[str] = []
    for word in words:
        term = known.get(word)
        if term is None:  # another thread may clear the cache meanwhile: never rely on it holding a word
            term = known[word] = _plain(word)
        found.append(term)
    return found
