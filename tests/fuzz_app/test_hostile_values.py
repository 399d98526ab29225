"""Hostile link values: a key the app reads set to Markdown, HTML or control characters ends in
a clean run whose page draws nothing of the value's own (no image, link, heading, HTML, nor a
spot Streamlit rewrites into one) and whose note quotes the value as the link spells it.
`make fuzz-app` (which sets FUZZ_APP_CASES) runs every key with every payload; `make test` runs
a slice, each payload once, on keys of several pages. (tests/browser/test_hostile_links_browser.py
checks every page in Chromium.)"""

import os

import pytest

from tests.fuzz_app.conftest import HOSTILE
from tests.fuzz_app.links import HARMLESS, hostile_case, page_markup, page_of, run_page
from tests.support.hostile import LINK_KEYS, PAYLOADS

STRIDE = 7   # the slice's keys: every seventh, so its cases fall on several pages
CASES = ([(key, name) for key in LINK_KEYS for name in PAYLOADS]
         if "FUZZ_APP_CASES" in os.environ else
         [(LINK_KEYS[i * STRIDE % len(LINK_KEYS)], name) for i, name in enumerate(PAYLOADS)])
EXPECTED: dict = {}   # key -> the page's markup with a harmless value for it


@pytest.mark.parametrize("key, payload", CASES, ids=[f"{key}-{name}" for key, name in CASES])
def test_a_hostile_value_is_shown_as_text(key, payload, record):
    if key not in EXPECTED:
        at, case = run_page(page_of(key), {key: HARMLESS})
        assert case.clean, (case.outcome, case.detail)
        EXPECTED[key] = page_markup(at)
    _, case = hostile_case(page_of(key), {key: PAYLOADS[payload]}, PAYLOADS[payload],
                           EXPECTED[key])
    HOSTILE.append((payload, case))
    assert case.clean, (case.outcome, key, payload, case.detail)
