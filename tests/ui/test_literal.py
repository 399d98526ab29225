"""ui.literal: any text from outside, through the one helper, is plain text in Markdown. The
Markdown syntax is checked with markdown-it (CommonMark, with GitHub's tables and strikethrough);
the rewrites Streamlit makes to the text after parsing are checked by their own patterns, as its
1.67 frontend spells them (tests/support/hostile.py). The browser test
(tests/browser/test_hostile_links_browser.py) checks the whole chain in Chromium."""

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.hostile import MARKDOWN, PAYLOADS, REWRITES
from ui.literal import JOINER, LIMIT, literal, visible

HOSTILE = [*PAYLOADS.values(), "<img src=x onerror=alert(1)>", "*em* __strong__ ~~gone~~",
           "1. one", "- item", "===", "[ref]: https://evil.example", "<https://evil.example>"]
# text that looks like what Streamlit rewrites, and any text at all
REWRITABLE = st.lists(st.sampled_from(["www.", "evil", ".example", "https://", "http://", "@",
                                        ":", "smile", "material/", " ", "--", "->", "<", "=", "~"]),
                      max_size=12).map("".join)


def inline_tokens(markdown: str) -> list:
    return [child for token in MARKDOWN.parse(markdown) if token.type == "inline"
            for child in token.children]


def text_nodes(markdown: str) -> str:
    """The text markdown-it reads from `markdown`, which must be one paragraph of plain text:
    what Streamlit's rewrites then see (escapes gone, word joiners kept)."""
    blocks = [token.type for token in MARKDOWN.parse(markdown)]
    assert blocks in ([], ["paragraph_open", "inline", "paragraph_close"]), blocks
    children = inline_tokens(markdown)
    assert {child.type for child in children} <= {"text"}, [c.type for c in children]
    return "".join(child.content for child in children)


def shown_text(markdown: str) -> str:
    return text_nodes(markdown).replace(JOINER, "")


@given(st.one_of(st.text(), st.sampled_from(HOSTILE), REWRITABLE))
def test_any_text_is_one_paragraph_of_itself(text):
    """Any text, cut or not, is a paragraph of plain text that reads as the text (its control
    characters spelled out; spaces at its ends are the paragraph's to trim)."""
    assert shown_text(literal(text, limit=None)).strip() == visible(text).strip()


@given(st.one_of(st.text(), st.sampled_from(HOSTILE), REWRITABLE))
def test_no_streamlit_rewrite_matches(text):
    read = text_nodes(literal(text))
    assert [name for name, p in REWRITES.items() if p.search(read)] == []


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_markdown_is_shown_as_written_inside_a_sentence(text):
    sentence = f"- `gpu`=“{literal(text)}” in the link is not one of h100-sxm, a100-80gb"
    tokens = MARKDOWN.parse(sentence)
    assert [t.type for t in tokens] == ["bullet_list_open", "list_item_open", "paragraph_open",
                                        "inline", "paragraph_close", "list_item_close",
                                        "bullet_list_close"]
    assert [c.type for c in inline_tokens(sentence)] == ["code_inline", "text"]
    assert visible(text[:LIMIT]).strip() in shown_text(literal(text))


def test_control_and_format_characters_are_spelled_out():
    assert visible("a\nb\tc\x1bd\u202ee\u2028f\u200bg") == "a\\nb\\tc\\x1bd\\u202ee\\u2028f\\u200bg"
    assert visible("plain, café, 日本, 12 345") == "plain, café, 日本, 12 345"


def test_a_long_value_is_cut_and_says_how_long_it_was():
    text = "9" * (LIMIT + 40)
    assert literal(text) == "9" * LIMIT + f"… ({LIMIT + 40:,} characters)"
    assert literal(text, limit=None) == text
    assert literal("9" * LIMIT) == "9" * LIMIT


def test_every_punctuation_character_is_escaped_and_nothing_else_changes():
    assert literal("budget 576") == "budget 576"
    for ch in string.punctuation:
        assert literal(f"a{ch}b") == f"a{JOINER}\\{ch}b"
