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
            # the list opens below its button: one near the window's bottom (a tall figure above
            # it) would put its last files outside the window, where no click lands
            files.evaluate("element => element.scrollIntoView({block: 'center'})")
            if not button.is_visible():
                files.click()
            with page.expect_download(timeout=45_000) as started:
                button.click()
            return started.value
        except PlaywrightTimeout:
            if attempt == 2:
                raise
            page.wait_for_selector(SETTLED, timeout=30_000)


# The page's main figure when it plays in the player (ui/learn/player.py show_player).
PLAYER_FRAME = ".st-key-main-figure iframe"
# In the player's frame: the screen point of the widest item of `marktype` whose datum has
# `field` (player.js keeps the Vega view as window.playerView), with how many there are and the
# item's datum.
WIDEST_ITEM_AT = """([marktype, field]) => {
  const view = window.playerView, found = [];
  const walk = (node) => {
    if (node.marktype === marktype) for (const it of node.items || [])
      if (it.datum && it.datum[field] !== undefined) found.push(it);
    for (const it of node.items || []) for (const child of it.items || []) walk(child);
  };
  walk(view.scenegraph().root);
  found.sort((a, b) => (b.x2 - b.x) - (a.x2 - a.x));
  const it = found[0], [ox, oy] = view.origin();
  const c = view.container().querySelector('canvas').getBoundingClientRect();
  const y2 = it.y2 === undefined ? it.y + it.height : it.y2;
  return {x: c.left + ox + (it.x + it.x2) / 2, y: c.top + oy + (it.y + y2) / 2,
          count: found.length, datum: it.datum};
}"""


def player(page):
    """The page's player, drawn and ready: its frame."""
    frame = page.wait_for_selector(PLAYER_FRAME, timeout=30_000).content_frame()
    frame.wait_for_function("window.playerReady === true", timeout=30_000)
    return frame


def hover_widest(page, frame, marktype: str, field: str) -> dict:
    """Move the mouse onto the widest `marktype` item with `field` in the player's frame (scrolled
    into view first); what WIDEST_ITEM_AT found."""
    page.locator(PLAYER_FRAME).scroll_into_view_if_needed()
    at = frame.evaluate(WIDEST_ITEM_AT, [marktype, field])
    box = page.locator(PLAYER_FRAME).bounding_box()
    page.mouse.move(box["x"] + at["x"], box["y"] + at["y"])
    return at


def horizontal_overflow(page) -> int:
    """How many pixels the page's main column is wider than the window shows (0 or less: no
    horizontal scroll bar)."""
    return page.evaluate("() => { const m = document.querySelector('[data-testid=\"stMain\"]');"
                         " return m.scrollWidth - m.clientWidth; }")
