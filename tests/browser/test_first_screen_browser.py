"""What a fresh visit fetches to draw a page's figures (ui/server.py `FIGURE_CHUNKS`): the code
of the element that draws them comes with the page, before it connects, never after (a fetch
after would wait for the page's script), and a page does not fetch that code for a figure it
does not draw. `python -m benchmarks.first_render` measures the time it saves."""

import pytest

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
            BidiComponent: document.querySelectorAll('[data-testid^="stBidiComponent"]').length}};
}"""
FIGURE_ELEMENTS = ("IFrame", "BidiComponent")


@pytest.mark.parametrize("path", [*DEFAULTS, "tour"])
def test_a_pages_figure_code_comes_with_the_page(new_tab, app_url, path):
    page = new_tab()
    page.goto(f"{app_url}/{path}")
    settle(page)
    seen = page.evaluate(FETCHES)
    fetched = {name: start for name, start in seen["scripts"] if name in FIGURE_ELEMENTS}
    drawn = {name for name, count in seen["drawn"].items() if count}
    assert set(fetched) == drawn, f"/{path} draws {drawn} and fetched the code of {set(fetched)}"
    late = {name for name, start in fetched.items() if start > seen["connect"]}
    assert not late, f"/{path} fetched the code of {late} after connecting: preload it"
