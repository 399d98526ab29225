"""Debian's Chromium as the browser tests, benchmarks and screenshots launch it, and waiting for a
page: its run finished, a widget settled on a value."""

from playwright import sync_api
from playwright.sync_api import TimeoutError as PlaywrightTimeout

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium reaches for Google's hosts at every start.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# The app's own record of its script: Streamlit's "Running" widget shows only after a delay, so
# its absence alone can be read in the middle of a run.
SETTLED = "[data-testid='stApp'][data-test-script-state='notRunning']"
# The box of every chart in the page (ui/shell/chart_view.py's BOX_CLASS, or Streamlit's own chart
# element where that falls back to it); it holds a canvas once the chart is drawn.
CHARTS = ".lab-chart, [data-testid='stVegaLiteChart']"


def wait_for_run(page, heading: str):
    """The page's heading is shown (the run that draws it has started) and that run has
    finished."""
    page.get_by_role("heading", name=heading).first.wait_for(timeout=30_000)
    page.wait_for_selector(SETTLED, timeout=30_000)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=30_000)


def has_value(page, label: str, value: str) -> None:
    """The widget settles on `value`. A fresh session can render once with the defaults before the
    rerun that applies the link's values, so this waits for the value instead of reading it once."""
    sync_api.expect(page.get_by_label(label, exact=True)).to_have_value(value, timeout=15_000)


def download(page, name: str, kind: str):
    """Open the chart `name`'s Download list and click its `kind` (ui/shell/widgets.py `downloads`);
    the Download. Once, in a whole-suite CI run, a click on a file made on click (Streamlit's
    deferred download) brought nothing in 60 s, and never when run alone; the server drops a
    deferred file's callable when a run clears the references it keeps, so a click can land
    between the two. One more click, after the page settles, tells that from a download that
    never comes."""
    files = page.locator(f".st-key-downloads_{name}").get_by_role("button")
    button = page.locator(f".st-key-download_{name}_{kind}").get_by_role("button")
    for attempt in (1, 2):
        try:
            if not button.is_visible():
                files.click()
            with page.expect_download(timeout=45_000) as started:
                button.click()
            return started.value
        except PlaywrightTimeout:
            if attempt == 2:
                raise
            page.wait_for_selector(SETTLED, timeout=30_000)
