"""The app in Debian's Chromium: every page loads without an exception box, and a link round trip
restores the controls. Skipped when /usr/bin/chromium or Playwright is missing. (The player's own
play / pause / scrub test lives with charts.player.)"""

from pathlib import Path

import pytest

from tests.support.browser import has_value, wait_for_run
from tests.support.server import streamlit_server

ROOT = Path(__file__).resolve().parents[2]
PAGES = {"": "Chunked Prefill Lab", "side_by_side": "Side by side",
         "worked_example": "Worked example", "roofline": "Roofline",
         "fidelity": "How close is this to a real GPU?", "traffic": "Traffic",
         "budget_tradeoff": "Budget trade-off", "capacity": "Capacity", "memory": "Memory"}


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    yield context.new_page()
    context.close()


@pytest.mark.parametrize("path", list(PAGES))
def test_each_page_loads_without_an_exception(page, app_url, path):
    page.goto(f"{app_url}/{path}")
    wait_for_run(page, PAGES[path])
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.locator('[data-testid="stAlertContentError"]').count() == 0
    has_value(page, "New prompt (tokens)", "8192")


def test_link_round_trip_restores_the_controls(page, app_url):
    page.goto(f"{app_url}/side_by_side?prompt=4096&budget=1024")
    wait_for_run(page, "Side by side")
    has_value(page, "New prompt (tokens)", "4096")
    has_value(page, "Token budget per iteration", "1024")

    # a change in the page goes into the link ...
    decodes = page.get_by_label("Running decodes", exact=True)
    decodes.fill("32")
    decodes.press("Enter")
    page.wait_for_url("**decodes=32**", timeout=15_000)
    link = page.url
    assert "prompt=4096" in link and "budget=1024" in link

    # ... and the link, opened fresh, restores every control
    fresh = page.context.new_page()
    fresh.goto(link)
    wait_for_run(fresh, "Side by side")
    for label, value in (("New prompt (tokens)", "4096"), ("Token budget per iteration", "1024"),
                         ("Running decodes", "32")):
        has_value(fresh, label, value)


def test_controls_survive_moving_between_pages(page, app_url):
    page.goto(f"{app_url}/worked_example?prompt=4096")
    wait_for_run(page, "Worked example")
    # Streamlit 1.67 drops bound params (and the values) when a page link is clicked while the
    # session's first script run is still going; reproduced with a three-line app, not ours.
    page.wait_for_timeout(1000)
    page.get_by_role("link", name="Roofline", exact=True).click()
    wait_for_run(page, "Roofline")
    assert "prompt=4096" in page.url
    has_value(page, "New prompt (tokens)", "4096")


def test_out_of_range_link_value_shows_a_note(page, app_url):
    page.goto(f"{app_url}/side_by_side?budget=0")
    wait_for_run(page, "Side by side")
    assert page.get_by_text("`budget=0`", exact=False).count() or \
        page.get_by_text("budget=0 in the link", exact=False).count()
    has_value(page, "Token budget per iteration", "1")
    assert page.locator('[data-testid="stException"]').count() == 0


@pytest.mark.parametrize("label, head", [("PNG", b"\x89PNG"), ("SVG", b"<svg"),
                                         ("CSV", b"intensity,"), ("JSON", b"{")])
def test_chart_downloads(page, app_url, label, head):
    page.goto(f"{app_url}/roofline")
    wait_for_run(page, "Roofline")
    # the roofline chart's own button, by its key: a rerun can redraw the page's buttons in turn
    button = page.locator(f".st-key-download_roofline_{label.lower()}").get_by_role("button")
    with page.expect_download(timeout=30_000) as download:
        button.click()
    assert Path(download.value.path()).read_bytes().startswith(head)


def test_a_malformed_trace_upload_is_a_message(page, app_url):
    page.goto(f"{app_url}/traffic?workload=upload")
    wait_for_run(page, "Traffic")
    page.locator('input[type="file"]').set_input_files(files=[{
        "name": "bad.csv", "mimeType": "text/csv",
        "buffer": b"arrival_s,prompt_tokens,output_tokens\n0,100,4\n0.5,<b>x</b>,4\n"}])
    error = page.locator('[data-testid="stAlertContentError"]')
    error.wait_for(timeout=30_000)
    assert "row 3, column prompt_tokens" in error.inner_text()
    assert error.locator("b").count() == 0                      # shown as text, never markup
    assert page.locator('[data-testid="stException"]').count() == 0


def test_a_deep_link_opened_first_on_a_fresh_server_runs_through_app_py(browser, tmp_path):
    """The first request a new server gets is a deep link (a slide's link, right after `make
    run`): the page still comes with the sidebar's controls, because every page script lives in
    a subfolder of pages/ (app.py's docstring says why)."""
    with streamlit_server(ROOT / "app.py", tmp_path / "server.log") as url:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        try:
            fresh = context.new_page()
            fresh.goto(f"{url}/roofline?prompt=4096")
            wait_for_run(fresh, "Roofline")
            assert fresh.locator('[data-testid="stSidebar"]').count() == 1
            has_value(fresh, "New prompt (tokens)", "4096")
        finally:
            context.close()
