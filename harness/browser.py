"""Debian's Chromium as the browser tests, benchmarks and screenshots launch it, and waiting for a
page: its run finished, a widget settled on a value."""

from playwright import sync_api

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
