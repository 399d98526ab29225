"""Offline with a clean console (what `make run` serves, serve.py): on every page, at its defaults
and at the extreme settings, no request leaves the machine, the console has no error and Vega no
warning; the favicon ships with the app. (Chromium's own warnings about the feature list of
Streamlit's iframe are not the app's and are not counted.)"""

import urllib.request

import pytest

from tests.browser.pages import VISITS, ids


@pytest.mark.parametrize("path, scheme", VISITS, ids=ids(VISITS))
def test_no_request_leaves_the_machine(visited, path, scheme):
    assert visited(path, scheme).outside == []


@pytest.mark.parametrize("path, scheme", VISITS, ids=ids(VISITS))
def test_no_console_error_and_no_vega_warning(visited, path, scheme):
    page = visited(path, scheme)
    assert page.errors == []
    assert page.vega_warnings == []
    assert page.page_not_found == 0 and page.exceptions == 0


def test_the_favicon_ships_with_the_app(browser, app_url):
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{app_url}/roofline")
        page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']",
                               timeout=60_000)
        href = page.wait_for_function(
            """() => { const links = [...document.querySelectorAll("link[rel~='icon']")];
                       const icon = links.find(l => !l.href.endsWith('/favicon.png'));
                       return icon && icon.href; }""", timeout=15_000).json_value()
        assert href.startswith(app_url)
        with urllib.request.urlopen(href, timeout=10) as reply:
            assert reply.read(4) == b"\x89PNG"
    finally:
        context.close()
