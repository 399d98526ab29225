"""What a fresh visit fetches to draw a page's figures (ui/shell/server.py `FIGURE_CHUNKS`): the code
of the element that draws them comes with the page, before it connects, never after (a fetch
after would wait for the page's script), and a page preloads no such code for a figure it does
not draw (the component that draws a chart also reports a projector's room: on a page without a
chart its code comes later, as the room's report needs it). `python -m benchmarks.first_render`
measures the time it saves."""

import pytest

from harness.browser import CHARTS
from harness.visit import settle
from tests.browser.pages import DEFAULTS

# every script file fetched: its name's first part and when the fetch started, and when the
# page first asked its server for its health (the start of its connection)
FETCHES = """() => {
  const entries = performance.getEntriesByType('resource');
  const connect = Math.min(...entries.filter(e => e.name.endsWith('/_stcore/health')).map(e => e.startTime));
  return {connect, scripts: entries.filter(e => /\\/static\\/js\\/[^/]+\\.js$/.test(e.name))
    .map(e => [e.name.split('/').pop().split('.')[0], e.startTime]),
    drawn: {IFrame: document.querySelectorAll('[data-testid="stIFrame"]').length,
            BidiComponent: document.querySelectorAll("CHARTS").length}};
}""".replace("CHARTS", CHARTS)
FIGURE_ELEMENTS = ("IFrame", "BidiComponent")


@pytest.mark.parametrize("path", [*DEFAULTS, "tour"])
def test_a_pages_figure_code_comes_with_the_page(new_tab, app_url, path):
    page = new_tab()
    page.goto(f"{app_url}/{path}")
    settle(page)
    seen = page.evaluate(FETCHES)
    fetched = {name: start for name, start in seen["scripts"] if name in FIGURE_ELEMENTS}
    drawn = {name for name, count in seen["drawn"].items() if count}
    early = {name for name, start in fetched.items() if start <= seen["connect"]}
    assert early == drawn, (f"/{path} draws the figures of {drawn or 'none'} and preloaded the "
                            f"code of {early or 'none'}: preload what it draws, nothing else")
