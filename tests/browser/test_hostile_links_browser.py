"""A stranger's link, in Chromium, as `make run` serves the app: every page opened once with
every key the app reads set to hostile Markdown, HTML and control characters
(tests/support/hostile.py) draws no element the same page at its defaults does not (no image, no
link, no heading, script or frame), sends no request off the machine, and quotes each value as
written. (`make fuzz-app` runs every key with every payload, tests/fuzz_app.) And any path a user
may type gets the app's own page: a page's path in another case, Home's navigation name, or a
path that is no page (Home, with a note that lists the pages); never Streamlit's bare "Page not
found"."""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright import sync_api

from harness.browser import has_value, wait_for_run
from harness.visit import settle
from tests.support.hostile import LINK_KEYS, PAYLOADS
from ui.shell import story
from ui.shell.literal import LIMIT, visible

PATHS = ["" if page is story.PAGES[0] else Path(page.path).stem for page in story.PAGES]
# every element a page draws that can show, fetch or run something, as (tag, its address or text)
ELEMENTS = """() => [...document.body.querySelectorAll(
    'img, image, a[href], h1, h2, h3, h4, h5, h6, script, iframe, object, embed, video, audio, '
    + 'source, form, meta, base')].map(e => [e.tagName.toLowerCase(),
      e.getAttribute('src') || e.getAttribute('href') || e.getAttribute('data') || e.textContent])"""


def hostile_query(shift: int) -> str:
    """Every key with a payload, the payloads dealt round the keys (each page another deal)."""
    payloads = list(PAYLOADS.values())
    return urlencode([(key, payloads[(i + shift) % len(payloads)])
                      for i, key in enumerate(LINK_KEYS)])


def open_offline(new_tab, url: str):
    """A fresh tab on `url`, and the requests it tried to send off the machine (each refused
    before it left)."""
    page, outside = new_tab(), []
    local = url.split("/", 3)[:3]

    def gate(route):
        if route.request.url.split("/", 3)[:3] == local or route.request.url.startswith(
                ("data:", "blob:", "about:")):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()
    page.context.route("**/*", gate)
    page.goto(url)
    return page, outside


def drawn(page, still_s: float = 3.0, timeout_s: float = 90.0) -> Counter:
    """The page's elements once it is drawn: its script idle and nothing new for `still_s` (a
    page's last parts can come seconds after a first idle moment; a page may also stop early,
    as one whose link picks no policy does)."""
    settle(page)
    seen, since, start = None, time.monotonic(), time.monotonic()
    while time.monotonic() - start < timeout_s:
        now = Counter(tuple(element) for element in page.evaluate(ELEMENTS))
        if now != seen:
            seen, since = now, time.monotonic()
        elif time.monotonic() - since >= still_s:
            return now
        page.wait_for_timeout(250)
    raise AssertionError(f"{page.url} was still changing after {timeout_s:g} s")


def shown(page) -> str:
    """The page's text as a reader sees it, white space as the browser collapses it."""
    return re.sub(r"\s+", " ", page.locator("body").inner_text())


@pytest.mark.parametrize("path", PATHS)
def test_a_hostile_link_draws_fetches_and_runs_nothing_of_its_own(new_tab, app_url, path):
    expected = drawn(open_offline(new_tab, f"{app_url}/{path}")[0])
    shift = PATHS.index(path)
    page, outside = open_offline(new_tab, f"{app_url}/{path}?{hostile_query(shift)}")
    assert drawn(page) - expected == Counter()
    assert outside == []
    assert page.get_by_text("Page not found").count() == 0
    assert page.locator('[data-testid="stException"]').count() == 0
    text = shown(page)
    for i, key in enumerate(LINK_KEYS):      # each value quoted as the link spells it
        payload = list(PAYLOADS.values())[(i + shift) % len(PAYLOADS)]
        quoted = re.sub(r"\s+", " ", visible(payload[:LIMIT])).strip()
        assert f"“{quoted}" in text, (key, quoted)


@pytest.mark.parametrize("typed, heading, label, value", [
    ("ROOFLINE?prompt=4096", "Roofline", "New prompt (tokens)", "4096"),
    ("Side_By_Side?budget=1024", "Side by side", "Token budget per iteration", "1024"),
    ("start?decodes=32", "Chunked Prefill Lab", "Running streams", "32"),
])
def test_a_page_typed_another_way_is_that_page_with_the_links_values(new_tab, app_url, typed,
                                                                      heading, label, value):
    page = new_tab()
    page.goto(f"{app_url}/{typed}")
    wait_for_run(page, heading)
    has_value(page, label, value)
    assert page.get_by_text("Page not found").count() == 0


@pytest.mark.parametrize("typed", ["BUDGET=1024", "Budget=1024&budGET=64"])
def test_a_key_typed_in_another_case_is_the_key_and_the_link_says_it(new_tab, app_url, typed):
    page = new_tab()
    page.goto(f"{app_url}/side_by_side?{typed}")
    wait_for_run(page, "Side by side")
    has_value(page, "Token budget per iteration", "1024" if typed.startswith("BUDGET") else "64")
    page.wait_for_url(re.compile(r"/side_by_side\?budget=(1024|64)$"), timeout=15_000)
    assert page.get_by_text("in the link", exact=False).count() == 0      # no note: nothing wrong


def test_a_path_that_is_no_page_is_home_with_a_note_that_lists_the_pages(new_tab, app_url):
    page = new_tab()
    page.goto(f"{app_url}/rooflien?budget=1024")
    wait_for_run(page, "Chunked Prefill Lab")
    has_value(page, "Token budget per iteration", "1024")
    note = page.locator('[data-testid="stAlertContentWarning"]').first
    sync_api.expect(note).to_contain_text("There is no page “rooflien”")
    for entry in story.PAGES:
        sync_api.expect(note).to_contain_text(entry.title)
    assert page.get_by_text("Page not found").count() == 0
    assert "no_page" not in page.url


# Names a user copies from a note into a link or a flag: every punctuation mark Markdown or
# Streamlit may read (`_`, `-`, `.`, `:`, `*`, `!`), and a Persian word with its non-joiner.
NAME = "no_such-page.v2:x*y!"
PERSIAN = "می\u200cخواهم"


def copied(page, element) -> str:
    """What a user gets who selects `element` and copies it: the clipboard's text."""
    element.evaluate("""e => { const range = document.createRange(); range.selectNodeContents(e);
        getSelection().removeAllRanges(); getSelection().addRange(range); }""")
    page.keyboard.press("Control+C")
    return page.evaluate("navigator.clipboard.readText()")


@pytest.mark.parametrize("link, said", [
    (NAME, f"There is no page “{NAME}” in this lab"),
    (f"side_by_side?gpu={NAME}", f"gpu=“{NAME}” in the link is not one of"),
    (f"side_by_side?chunked={PERSIAN}", f"chunked=“{PERSIAN}” in the link is not one of"),
    (f"side_by_side?{NAME}=1", f"“{NAME}” in the link is not a setting of this lab"),
])
def test_an_echoed_value_copies_as_the_value(new_tab, app_url, link, said):
    """The note's text, as a copy gives it, holds the value exactly: no invisible character
    in it, no escape of a joiner it needs."""
    page = new_tab()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=app_url)
    page.goto(f"{app_url}/{link}")
    note = page.locator('[data-testid="stAlertContentWarning"]').first
    note.wait_for(timeout=30_000)
    assert said in copied(page, note)


def test_an_uploaded_files_name_copies_as_the_name(new_tab, app_url):
    page = new_tab()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=app_url)
    page.goto(f"{app_url}/traffic?workload=upload")
    wait_for_run(page, "Traffic")
    page.locator('input[type="file"]').set_input_files(files=[{
        "name": f"{NAME}.csv", "mimeType": "text/csv",
        "buffer": b"arrival_s,prompt_tokens,output_tokens\n0,100,4\n0.5,200,4\n"}])
    caption = page.get_by_test_id("stCaptionContainer").filter(has_text="requests over").first
    caption.wait_for(timeout=60_000)
    assert f"Trace {NAME}.csv: 2 requests" in copied(page, caption)
