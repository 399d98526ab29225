"""What every page says, read as a learner reads it: each acronym spelled out where the page
first uses it (the sidebar, shown on every page, on its own), and none of the project's internal
words (a source article by the tracker's label for it, a tracker's work-item number) on screen,
in hover texts (widget help, glossary tooltips) as much as in the page's text."""

import re

import pytest

from sim.studies.worked_example import SOURCE_ARTICLE
from tests.support.apptest import ALL_PAGES, assert_clean, hover_texts, open_app, text_in_order
from tests.support.internal_words import ARTICLE_LABEL, ARTICLES, WORK_ITEM
from ui.shell.glossary import ACRONYMS


def first_use_unexplained(text: str) -> list[str]:
    """The acronyms whose first use in `text` is neither "expansion (ACRONYM)" nor
    "ACRONYM (expansion)"."""
    missing = []
    for acronym, long in ACRONYMS.items():
        stem = acronym.removesuffix("s")
        found = re.search(rf"\b{re.escape(stem)}s?\b", text)
        if not found:
            continue
        before, after = text[:found.start()].lower(), text[found.end():].lower()
        if not (before.endswith(f"{long} (".lower()) or after.startswith(f" ({long}".lower())):
            missing.append(f"{acronym} at …{text[max(0, found.start() - 60):found.end() + 20]!r}")
    return missing


def test_the_check_catches_an_acronym_used_before_it_is_spelled_out():
    assert first_use_unexplained("time to first token (TTFT) then TTFT") == []
    assert first_use_unexplained("TTFT (time to first token)") == []
    assert first_use_unexplained("the TTFT, then time to first token (TTFT)")
    assert first_use_unexplained("peak FLOPs, then floating-point operations (FLOPs)")
    assert first_use_unexplained("TFLOP/s and GFLOP are units") == []


@pytest.mark.parametrize("page", ALL_PAGES)
def test_every_acronym_is_spelled_out_where_the_page_first_uses_it(page):
    at = open_app(page)
    assert_clean(at)
    for where, block in (("page", at.main), ("sidebar", at.sidebar)):
        assert first_use_unexplained(text_in_order(block)) == [], where


def internal_words(text: str) -> list[str]:
    """The project's internal words in `text`: a source article by the tracker's label for it, a
    tracker's work-item number (tests/support/internal_words.py); the label's word is allowed
    only as the traffic pages' random seed."""
    return (re.findall(r"\bseed 0\d*|(?<!random )\bseeds?\b", text, re.I)
            + re.findall(r"\bissue #?\d+", text, re.I))


def test_the_check_catches_internal_words():
    assert internal_words(f"Defaults reproduce {ARTICLE_LABEL}.") == [ARTICLE_LABEL]
    assert internal_words(f"the {ARTICLES} arithmetic") == [ARTICLES[:-1]]
    assert internal_words(f"fixed in {WORK_ITEM}") == [WORK_ITEM]
    assert internal_words("random seed: 7; the source article's worked example") == []


@pytest.mark.parametrize("page", ALL_PAGES)
def test_no_internal_words_on_screen(page):
    at = open_app(page)
    for block in (at.main, at.sidebar):
        assert internal_words(text_in_order(block)) == []
        assert internal_words(hover_texts(block)) == []


@pytest.mark.parametrize("page", ["pages/under_load/traffic.py", "pages/under_load/budget_tradeoff.py",
                                  "pages/advanced/capacity.py", "pages/advanced/memory.py"])
def test_the_load_pages_name_what_they_cite_and_show_si_sizes(page):
    """A page that cites the source article names it; sizes in SI decimal units (GB, not GiB)."""
    at = open_app(page)
    assert_clean(at)
    text = text_in_order(at.main)
    assert "source article" not in text or SOURCE_ARTICLE in text
    assert "the paper" not in text or "Sarathi-Serve paper" in text
    assert re.findall(r"\b[KMGT]iB\b", text) == []
