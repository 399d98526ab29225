"""Link keys and values as people and strangers type them, three families:
- **key case**: a control's key in any case (`Budget`, `bUDGET`) with any value acts as the key:
  the page's notes and the link it is rewritten to are those of the key as the app spells it;
- **unknown key**: a key no control reads (any text, a hostile payload, a near miss such as
  `policy`) is named in a note as the link spells it, drawing no markup, and taken out of the
  link;
- **joiners**: a value of scripts and emoji that need joiners and variation selectors, among
  control and format characters, is quoted with each joiner between two shown characters as
  itself and every other invisible character escaped.
`make fuzz-app` (FUZZ_APP_CASES=504) runs 50 cases a family, `make test` 3."""

import os
import unicodedata
from dataclasses import replace

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.fuzz_app.conftest import FAMILIES
from tests.fuzz_app.links import PAGE_KEYS, hostile_case, page_markup, page_of, run_page, value
from tests.support.apptest import as_read
from tests.support.hostile import LINK_KEYS, PAYLOADS
from ui.shell.controls import CONTROLS, KEY_SPELLINGS, NO_PAGE
from ui.shell.literal import LIMIT

CASES = max(3, int(os.environ.get("FUZZ_APP_CASES", "27")) // 10)
SETTINGS = settings(max_examples=CASES, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
STREAMLITS_OWN = {"embed", "embed_options"}   # keys Streamlit keeps out of st.query_params
EXPECTED: dict = {}   # (page, key) -> the page's markup with a harmless value for it


def expected(page: str, key: str, harmless: str = "zz"):
    if (page, key) not in EXPECTED:
        at, case = run_page(page, {key: harmless})
        assert case.clean, (case.outcome, case.detail)
        EXPECTED[page, key] = page_markup(at)
    return EXPECTED[page, key]


@st.composite
def recased(draw) -> tuple[str, str]:
    """A control's key and the same key with some of its letters in capitals."""
    key = draw(st.sampled_from(list(CONTROLS)))
    upper = draw(st.lists(st.booleans(), min_size=len(key), max_size=len(key)))
    spelled = "".join(ch.upper() if up else ch for ch, up in zip(key, upper))
    assume(spelled != key)
    return key, spelled


@SETTINGS
@given(key_and_spelling=recased(), page=st.sampled_from(list(PAGE_KEYS)), data=st.data())
def test_a_key_in_any_case_acts_as_the_key(key_and_spelling, page, data):
    key, spelled = key_and_spelling
    raw = data.draw(value(CONTROLS[key]))
    as_spelled, _ = run_page(page, {key: raw})
    at, case = run_page(page, {spelled: raw})
    if case.clean and (dict(at.query_params), [w.value for w in at.warning]) != (
            dict(as_spelled.query_params), [w.value for w in as_spelled.warning]):
        case = replace(case, outcome="unlike the key", detail=str(dict(at.query_params))[:200])
    FAMILIES.append(("key case", case))
    assert case.clean, (case.outcome, case.query, case.detail)


UNKNOWN = st.one_of(st.text(min_size=1, max_size=80), st.sampled_from(list(PAYLOADS.values())),
                    st.sampled_from(["policy", "Policy", "budgets", "gpus", "utm_source", " ",
                                     "budget ", "no_page_", "%", "&", "="]))


@SETTINGS
@given(key=UNKNOWN, page=st.sampled_from(list(PAGE_KEYS)))
def test_a_key_no_control_reads_is_named_and_left_out(key, page):
    assume(key.lower() not in KEY_SPELLINGS and key != NO_PAGE and key.lower() not in STREAMLITS_OWN)
    at, case = hostile_case(page, {key: "1"}, key, expected(page, "zz", "1"))
    if case.clean and key in at.query_params:
        case = replace(case, outcome="kept in the link")
    FAMILIES.append(("unknown key", case))
    assert case.clean, (case.outcome, case.query, case.detail)


# pieces of Persian, Hindi and emoji sequences, the joiners and variation selectors between them,
# and the characters that must stay escaped among them: bidi overrides and isolates, other format
# characters, controls
WORDS = st.sampled_from(["می", "خواهم", "क्", "ष", "👩", "💻", "❤", "✌", "齋", "a"])
JOINERS = "\u200c\u200d"
GLUE = st.sampled_from(["", *JOINERS, "\ufe0f", "\ufe0e", "\U000e0100"])
ESCAPED = st.sampled_from(list("\u202a\u202e\u2066\u2069\u200b\u2060\ufeff\U000e0067\x1b\n\t"))


@st.composite
def joined(draw) -> tuple[str, bool]:
    """Words glued by joiners and variation selectors, sometimes with one character that must be
    escaped among them; and whether it has one."""
    words = draw(st.lists(WORDS, min_size=1, max_size=6))
    text = words[0] + "".join(draw(GLUE) + word for word in words[1:])
    if not draw(st.booleans()):
        return text, False
    at = draw(st.integers(0, len(text)))
    return text[:at] + draw(ESCAPED) + text[at:], True


@SETTINGS
@given(text_and_escaped=joined(), key=st.sampled_from(LINK_KEYS))
def test_joiners_in_a_value_are_shown_and_other_invisible_characters_escaped(text_and_escaped,
                                                                            key):
    text, escaped = text_and_escaped
    at, case = hostile_case(page_of(key), {key: text}, text, expected(page_of(key), key))
    notes = "".join(str(w.value) for w in at.warning)
    raw = {ch for ch in notes
           if ch == "\x1b" or unicodedata.category(ch) == "Cf" and ch not in JOINERS}
    if case.clean and raw:
        case = replace(case, outcome="unescaped", detail=repr(sorted(raw)))
    elif case.clean and not escaped and f"“{text[:LIMIT]}" not in as_read(notes):
        case = replace(case, outcome="not as typed", detail=repr(text))
    FAMILIES.append(("joiners", case))
    assert case.clean, (case.outcome, case.query, case.detail)
