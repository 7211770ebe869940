"""Function words that carry no topic, as index terms: a query term among them neither matches nor scores.

The lists come from the ``stopwords`` package (PyPI, ISC licence), which ships them as plain data files inside
the wheel, so nothing is downloaded at run time. Its English list is the classic 175 closed-class words (articles,
pronouns, auxiliaries, prepositions, conjunctions and their contractions: the same list NLTK and Snowball use) and
its Chinese list 125 single-character particles, pronouns and prepositions. Larger lists (``stop-words``,
``stopwordsiso``: 1,300 English entries) also drop words that are topics in a project's memory, such as
``computer``, ``system``, ``test``, ``index``, ``value`` and ``web``, so they were not chosen.

This module holds the words only; ``text.tokenize.stop_words`` splits them as the tokenizer splits words
(contractions into their pieces: ``don't`` → ``don``, ``t``), and a query word is judged as written, before
stemming: ``owns`` stems to the listed ``own`` but asks about ownership. Indexing keeps every word (phrases
and code need them); only query terms are filtered.
"""

from __future__ import annotations

import stopwords as _lists


def function_words() -> list[str]:
    """The English and Chinese function words, as the lists spell them (not yet tokenized)."""
    return [*_lists.get_stopwords("english"), *_lists.get_stopwords("chinese")]
