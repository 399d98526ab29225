"""ui.shell.literal: any text from outside, through the one helper, is its own text in Markdown: code
spans (and the slash of a split `:material/`), read with markdown-it (CommonMark, with GitHub's
tables and strikethrough); the rewrites Streamlit makes to plain text after parsing are checked
by their own patterns, as its 1.67 frontend spells them (tests/support/hostile.py). The browser
tests (tests/browser/test_hostile_links_browser.py) check the whole chain in Chromium, and that
the page's text of a value is the value."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.hostile import MARKDOWN, PAYLOADS, REWRITES
from ui.shell.literal import LIMIT, literal, visible

HOSTILE = [*PAYLOADS.values(), "<img src=x onerror=alert(1)>", "*em* __strong__ ~~gone~~",
           "1. one", "- item", "===", "[ref]: https://evil.example", "<https://evil.example>",
           "``` fence", "`", " ` ", "a``b`", "  two  ", ":material/home: x:material/", "  "]
# text that looks like what Streamlit rewrites, and any text at all
REWRITABLE = st.lists(st.sampled_from(["www.", "evil", ".example", "https://", "http://", "@",
                                        ":", "smile", "material/", " ", "--", "->", "<", "=", "~",
                                        "`", "``", "$", "\\"]),
                      max_size=12).map("".join)
ANY = st.one_of(st.text(), st.sampled_from(HOSTILE), REWRITABLE)
# names a user copies from a note into a link or a flag
COPIED = ["no_such_page_here", "h100-sxm.", "a:b", "*star*", "wow!", "_-.:*!"]


def inline_tokens(markdown: str) -> list:
    return [child for token in MARKDOWN.parse(markdown) if token.type == "inline"
            for child in token.children]


def read(markdown: str) -> str:
    """The text markdown-it reads from `markdown`, which must be one paragraph of code spans
    and the plain slashes between them: what the page shows, and a copy of it gives."""
    blocks = [token.type for token in MARKDOWN.parse(markdown)]
    assert blocks in ([], ["paragraph_open", "inline", "paragraph_close"]), blocks
    children = inline_tokens(markdown)
    assert {child.type for child in children} <= {"code_inline", "text"}, children
    assert all(c.content == "/" for c in children if c.type == "text"), children
    return "".join(child.content for child in children)


@given(ANY)
def test_any_text_reads_as_itself_exactly(text):
    """Not a character added or lost (its control characters spelled out); spaces at its
    ends kept."""
    assert read(literal(text, limit=None)) == visible(text)


@given(ANY)
def test_no_streamlit_rewrite_matches(text):
    markdown = literal(text)
    plain = [c.content for c in inline_tokens(markdown) if c.type == "text"]
    assert [name for name, p in REWRITES.items() for part in plain if p.search(part)] == []
    assert ":material/" not in markdown      # rewritten by Streamlit before Markdown is read


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_markdown_is_shown_as_written_inside_a_sentence(text):
    sentence = f"- `gpu`=“{literal(text)}” in the link is not one of h100-sxm, a100-80gb"
    tokens = MARKDOWN.parse(sentence)
    assert [t.type for t in tokens] == ["bullet_list_open", "list_item_open", "paragraph_open",
                                        "inline", "paragraph_close", "list_item_close",
                                        "bullet_list_close"]
    children = inline_tokens(sentence)
    assert {c.type for c in children} == {"code_inline", "text"}
    cut = f"… ({len(text):,} characters)" if len(text) > LIMIT else ""
    assert "".join(c.content for c in children) == (
        f"gpu=“{visible(text[:LIMIT])}{cut}” in the link is not one of h100-sxm, a100-80gb")


@pytest.mark.parametrize("name", COPIED)
def test_a_name_is_its_own_characters_and_no_others(name):
    """What a user copies from a note is what was in the link: no invisible character before
    the punctuation (the word joiners this helper once added)."""
    assert literal(name) == f"`{name}`"


def test_control_and_format_characters_are_spelled_out():
    assert visible("a\nb\tc\x1bd\u202ee\u2028f\u200bg") == "a\\nb\\tc\\x1bd\\u202ee\\u2028f\\u200bg"
    assert visible("plain, café, 日本, 12 345") == "plain, café, 日本, 12 345"
    assert visible("a\u2066b\u2069c\u2060d\U000E0067e") == "a\\u2066b\\u2069c\\u2060d\\U000e0067e"


@pytest.mark.parametrize("text", [
    "می\u200cخواهم",                  # Persian: a non-joiner inside a word
    "क्\u200dष",                      # Hindi: a joiner after a virama
    "👩\u200d💻",                      # an emoji sequence
    "❤\ufe0f\u200d🔥",                 # a variation selector, then a joiner
    "✌\ufe0e", "齋\U000E0100",         # variation selectors: text style, an ideograph's variant
])
def test_joiners_and_variation_selectors_between_characters_are_themselves(text):
    assert visible(text) == text
    assert read(literal(text)) == text


@pytest.mark.parametrize("text, shown", [
    ("\u200dab", "\\u200dab"), ("ab\u200c", "ab\\u200c"),            # at an end: nothing to join
    ("a\u200d\u200db", "a\\u200d\\u200db"),                         # beside another hidden one
    ("a\u200d\u202eb", "a\\u200d\\u202eb"), ("\u200d", "\\u200d"),
])
def test_a_joiner_with_nothing_to_join_is_spelled_out(text, shown):
    assert visible(text) == shown


def test_a_long_value_is_cut_and_says_how_long_it_was():
    text = "9" * (LIMIT + 40)
    assert literal(text) == "`" + "9" * LIMIT + f"`… ({LIMIT + 40:,} characters)"
    assert literal(text, limit=None) == f"`{text}`"
    assert literal("9" * LIMIT) == "`" + "9" * LIMIT + "`"


@pytest.mark.parametrize("text, markdown", [
    ("", ""), ("a`b", "``a`b``"), ("`a", "`` `a ``"), ("a``", "``` a`` ```"),
    (" a ", "`  a  `"), (" a", "` a`"), ("  ", "`  `"),
    ("x:material/home:", "`x:material`/`home:`"),
])
def test_the_fence_and_padding_keep_every_character(text, markdown):
    assert literal(text) == markdown
