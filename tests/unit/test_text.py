"""Text rules: query normalization, the search tokenizer, byte-safe UTF-8 truncation."""

from __future__ import annotations

import hashlib
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.text.normalize import normalize_query, query_digest, sha256_digest
from powercontext.text.tokenize import MAX_QUERY_TERMS, query_terms, terms
from powercontext.text.utf8 import truncate_utf8, truncate_with_ellipsis

# -- normalize_query ---------------------------------------------------------------------------


def test_normalize_query_trims_and_composes() -> None:
    decomposed = "  Cafe\u0301 re\u0301sume\u0301 \n\t"
    assert normalize_query(decomposed) == "Café résumé"
    assert normalize_query(decomposed) == unicodedata.normalize("NFC", "Café résumé")


def test_normalize_query_keeps_inner_whitespace_and_case() -> None:
    assert normalize_query("\u3000 Why  did WE choose SQLite? \u3000") == "Why  did WE choose SQLite?"


def test_equivalent_queries_have_one_digest() -> None:
    composed, decomposed = "élan", "e\u0301lan"
    assert composed != decomposed
    assert query_digest(composed) == query_digest("  " + decomposed + "\n")
    assert query_digest(composed) == "sha256:" + hashlib.sha256("élan".encode()).hexdigest()


def test_sha256_digest_hashes_utf8() -> None:
    assert sha256_digest("数据") == "sha256:" + hashlib.sha256("数据".encode()).hexdigest()
    assert sha256_digest(b"\xff\x00") == "sha256:" + hashlib.sha256(b"\xff\x00").hexdigest()


@given(st.text())
def test_normalize_query_is_nfc_of_stripped(text: str) -> None:
    result = normalize_query(text)
    assert result == unicodedata.normalize("NFC", text.strip())
    assert unicodedata.is_normalized("NFC", result)


# -- tokenizer ---------------------------------------------------------------------------------


@pytest.mark.parametrize("word", ["deploy", "deployment", "deployments", "deployed", "deploying", "Deploys"])
def test_deploy_family_shares_one_stem(word: str) -> None:
    assert terms(word) == terms("deploy")


def test_stemming_does_not_merge_unrelated_words() -> None:
    assert terms("deploy") != terms("employ")
    assert terms("database") != terms("data")


def test_case_folding() -> None:
    assert terms("SQLite DEPLOYMENT") == terms("sqlite deployment")
    assert terms("STRASSE") == terms("straße")
    assert terms("ÉCOLE") == terms("école")


def test_cjk_runs_become_overlapping_bigrams() -> None:
    assert terms("数据库迁移") == ["数据", "据库", "库迁", "迁移"]
    assert terms("数") == ["数"]


def test_cjk_bigram_of_a_word_is_among_the_sentence_terms() -> None:
    sentence = "我们决定把数据迁移到新的集群"
    assert set(terms("数据")) <= set(terms(sentence))


def test_mixed_script_word_splits_at_cjk_boundary() -> None:
    out = terms("SQLite数据库")
    assert out[0] == terms("sqlite")[0]
    assert out[1:] == ["数据", "据库"]


def test_punctuation_and_underscores_separate_words() -> None:
    assert terms("blue-green_deploy, v2!") == [*terms("blue"), *terms("green"), *terms("deploy"), *terms("v2")]
    assert terms("?!... ---") == []


def test_query_terms_are_distinct_in_first_occurrence_order() -> None:
    assert query_terms("deploy Deployment sqlite deploy") == [*terms("deploy"), *terms("sqlite")]


def test_query_terms_are_capped() -> None:
    words = " ".join(f"w{i}x" for i in range(100))
    result = query_terms(words)
    assert len(result) == MAX_QUERY_TERMS
    assert result == list(dict.fromkeys(terms(words)))[:MAX_QUERY_TERMS]


# -- UTF-8 truncation --------------------------------------------------------------------------


def test_truncate_utf8_never_splits_a_code_point() -> None:
    text = "a€😀b"  # 1 + 3 + 4 + 1 bytes
    assert [truncate_utf8(text, n) for n in range(10)] == ["", "a", "a", "a", "a€", "a€", "a€", "a€", "a€😀", "a€😀b"]


def test_truncate_utf8_zero_and_negative() -> None:
    assert truncate_utf8("abc", 0) == ""
    assert truncate_utf8("abc", -5) == ""


def test_truncate_with_ellipsis_counts_the_ellipsis() -> None:
    out = truncate_with_ellipsis("数据数据数据", 10)  # 3 + 3 + "…"(3) = 9 <= 10
    assert out == "数据…"
    assert len(out.encode()) <= 10


@settings(max_examples=300)
@given(st.text(), st.integers(min_value=0, max_value=200))
def test_truncate_utf8_is_the_longest_fitting_prefix(text: str, max_bytes: int) -> None:
    out = truncate_utf8(text, max_bytes)
    raw = out.encode("utf-8")
    assert text.startswith(out)
    assert len(raw) <= max_bytes
    assert text.encode("utf-8").startswith(raw)
    if out != text:  # maximal: one more character would not fit
        assert len(text[: len(out) + 1].encode("utf-8")) > max_bytes


@settings(max_examples=200)
@given(st.text(min_size=1), st.integers(min_value=3, max_value=200))
def test_truncate_with_ellipsis_fits(text: str, max_bytes: int) -> None:
    out = truncate_with_ellipsis(text, max_bytes)
    assert out.endswith("…")
    assert len(out.encode("utf-8")) <= max_bytes
    assert text.startswith(out[:-1])


def test_query_terms_leave_out_english_and_chinese_function_words() -> None:
    assert query_terms("How do the users log in?") == [*terms("users"), *terms("log")]
    assert query_terms("Why is THE search page slow?") == [*terms("search"), *terms("page"), *terms("slow")]
    # A CJK bigram of two function characters (我们, "we") goes; one that names something (数据) stays.
    assert query_terms("我们 数据") == ["数据"]
    assert query_terms("what is this and why is it there?") == []


def test_a_word_is_a_function_word_as_written_not_by_its_stem() -> None:
    # "owns" and "owned" stem to the listed "own", but ask who is responsible.
    assert query_terms("Who owns search?") == [*terms("owns"), *terms("search")]
    assert query_terms("Who owned billing?") == [*terms("owned"), *terms("billing")]
    assert query_terms("What are they doing? Don't ask.") == [*terms("ask")]
    assert query_terms("我们 的 数据") == ["数据"]


def test_terminal_text_shows_controls_and_invisible_characters_as_escapes() -> None:
    from powercontext.text.visible import terminal_text

    assert terminal_text("plain\ttext\nnext line\r\n") == "plain\ttext\nnext line\r\n"
    assert terminal_text("a\x1b[2Jb\x07\x00\x7f\x9b") == "a\\x1b[2Jb\\x07\\x00\\x7f\\x9b"
    assert terminal_text("over\rwrite") == "over\\x0dwrite"
    assert terminal_text("\u202eevil\u2066\u2028\x85") == "\\u202eevil\\u2066\\u2028\\x85"
    assert terminal_text("tag\U000e0041 zwsp\u200b") == "tag\\U000e0041 zwsp\\u200b"
    # Joiners that scripts and emoji need stay as they are.
    assert (
        terminal_text("\u0645\u200c\u06cc \U0001f468\u200d\U0001f469")
        == "\u0645\u200c\u06cc \U0001f468\u200d\U0001f469"
    )
