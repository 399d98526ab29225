"""Presenter mode on a projector, measured by element boxes in Chromium at the two projector sizes
(1920x1080, 1280x720), opened from a link (`?presenter=1`). On Home and Side by side: the sidebar
closed, no empty header space, the four key numbers and both lanes of the timeline on the first
screen, the player's controls on one line, 24 px text, 18 px chart labels drawn at that size,
large tooltips. On every page: nothing wider than the screen, every chart whole on one screen,
no button or label cut short with "…", the worked example's step on one screen with its Next.
Outside presenter mode, Side by side at 1440x900 and 1920x1080: both lanes beside each other on
the first screen, as wide as the page, how to read them above; a fresh visit in a desktop window
runs the page's script once. `pytest -s` prints the boxes."""

import json

import pytest

from harness.browser import CHARTS
from harness.visit import settle
from tests.browser.pages import DEFAULTS
from ui.shell.streamlit_internals import main_column_px

SIZES = [(1920, 1080), (1280, 720)]
PAGES = {"": "Chunked Prefill Lab", "side_by_side": "Side by side"}
HEADER_ROOM_PX = 64   # the page's first element starts under Streamlit's (transparent) header line

PAGE_BOXES = """() => {
  const box = (e) => { const b = e.getBoundingClientRect();
    return {left: Math.round(b.left), top: Math.round(b.top), right: Math.round(b.right),
            bottom: Math.round(b.bottom)}; };
  const main = document.querySelector('[data-testid="stMain"]');
  return {
    sidebar: box(document.querySelector('[data-testid="stSidebar"]')),
    title: box(main.querySelector('h1, h2')),
    cards: [...document.querySelectorAll('.st-key-key-numbers [data-testid="stMetric"]')].map(box),
    player: box(document.querySelector('.st-key-stage iframe')),
    text_px: Math.min(...[...main.querySelectorAll('[data-testid="stMarkdown"] p')]   // body text,
      .filter(p => !p.closest('[data-testid="stCaptionContainer"]'))                  // not captions
      .map(p => parseFloat(getComputedStyle(p).fontSize))),
  };
}"""
FRAME_BOXES = """() => {
  const box = (e) => { const b = e.getBoundingClientRect();
    return {left: Math.round(b.left), top: Math.round(b.top), right: Math.round(b.right),
            bottom: Math.round(b.bottom)}; };
  const drawn = document.querySelector('#chart').firstElementChild;
  const lane = (name) => {
    const b = window.playerViewBox(name), c = document.querySelector('#chart').getBoundingClientRect();
    return {top: Math.round(c.top + b.top), bottom: Math.round(c.top + b.top + b.height)}; };
  return {
    controls: box(document.querySelector('.controls')),
    buttons: [...document.querySelectorAll('.controls button, .controls select, .controls input')].map(box),
    canvas: box(document.querySelector('#chart canvas')),
    zoom: Number(drawn.style.zoom || 1),
    unchunked: lane('unchunked_heading_view'), chunked_last: lane('chunked_new_view'),
    frame_height: window.innerHeight, scroll_height: document.documentElement.scrollHeight,
    chart_overflow: document.querySelector('#chart').scrollHeight - document.querySelector('#chart').clientHeight,
  };
}"""


def ready_player(page):
    """The player's frame once the page has settled (the room's report reruns the page once;
    on a loaded machine the report, polled every 400 ms, can come a second after a run ends)."""
    settle(page, quiet_ms=2500)
    frame = page.locator(".st-key-stage iframe").element_handle().content_frame()
    frame.wait_for_function("window.playerReady === true && window.playerViewBox('chunked_new_view') "
                            "!== null", timeout=30_000)
    return frame


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("path", list(PAGES), ids=["home", "side_by_side"])
def test_presenter_mode_fits_a_projector(new_tab, app_url, path, size):
    width, height = size
    page = new_tab(width, height)
    page.goto(f"{app_url}/{path}?presenter=1")
    frame = ready_player(page)
    boxes, inside = page.evaluate(PAGE_BOXES), frame.evaluate(FRAME_BOXES)
    print(f"\n{path or 'home'} at {width}x{height}: {json.dumps(boxes)}\n  in the player: "
          f"{json.dumps(inside)}")

    assert boxes["sidebar"]["right"] <= 0                          # closed
    assert boxes["title"]["top"] < HEADER_ROOM_PX                  # no empty header space
    assert len(boxes["cards"]) == 4                                # the key numbers ...
    for card in boxes["cards"]:                                    # ... all on the first screen
        assert 0 <= card["top"] and card["bottom"] <= height and card["right"] <= width
    player = boxes["player"]
    assert player["bottom"] <= height and player["right"] <= width  # the whole player ...
    assert inside["scroll_height"] <= inside["frame_height"]       # ... nothing below its fold
    assert inside["canvas"]["bottom"] <= inside["frame_height"] and inside["chart_overflow"] <= 0
    assert inside["unchunked"]["top"] >= inside["controls"]["bottom"]   # both lanes drawn,
    assert inside["chunked_last"]["bottom"] <= inside["frame_height"]   # top to bottom
    assert inside["zoom"] == 1                                     # not scaled down: 18 px labels
    tops = {b["top"] for b in inside["buttons"]}
    assert max(tops) - min(tops) <= 12 and inside["controls"]["bottom"] - inside["controls"]["top"] < 80
    assert boxes["text_px"] >= 24
    config = frame.evaluate("JSON.parse(document.getElementById('player-spec').textContent).config")
    assert config["axis"]["labelFontSize"] >= 18 and config["style"]["text"]["fontSize"] >= 18


def test_a_tooltip_on_a_projector_is_large(new_tab, app_url):
    page = new_tab(1280, 720)
    page.goto(f"{app_url}/side_by_side?presenter=1")
    frame = ready_player(page)
    bars = frame.evaluate("""() => { const b = window.playerViewBox('chunked_bars_view'),
                                      c = document.querySelector('#chart').getBoundingClientRect();
                                      return {x: c.left + b.left + b.width * 0.1,
                                              y: c.top + b.top + b.height * 0.6}; }""")
    # the clock at the end draws every bar, with its tooltip
    frame.get_by_test_id("player-scrub").fill(frame.get_by_test_id("player-scrub").get_attribute("max"))
    offset = page.locator(".st-key-stage iframe").bounding_box()
    page.mouse.move(offset["x"] + bars["x"], offset["y"] + bars["y"])
    tooltip = frame.locator("#vg-tooltip-element.visible")
    tooltip.wait_for(timeout=10_000)
    assert "duration (ms)" in tooltip.inner_text()
    assert float(tooltip.evaluate("e => getComputedStyle(e).fontSize").removesuffix("px")) >= 20


def test_high_contrast_text_is_full_ink(new_tab, app_url):
    page = new_tab(1280, 720)
    page.goto(f"{app_url}/side_by_side?contrast=1")
    settle(page)
    caption = page.locator('[data-testid="stCaptionContainer"]').first
    assert caption.evaluate("e => getComputedStyle(e).color") == "rgb(0, 0, 0)"
    frame = page.locator("iframe").first.element_handle().content_frame()
    frame.wait_for_function("window.playerReady === true", timeout=30_000)
    assert "contrast" in frame.evaluate("document.documentElement.className")


PAGE_FIT = """() => {
  const box = (e) => { const b = e.getBoundingClientRect();
    return {left: Math.round(b.left), top: Math.round(b.top), right: Math.round(b.right),
            bottom: Math.round(b.bottom), width: Math.round(b.width), height: Math.round(b.height)}; };
  const main = document.querySelector('[data-testid="stMain"]');
  const cut = (e) => [e, ...e.querySelectorAll('*')].some(
    x => x.scrollWidth > x.clientWidth + 1 && getComputedStyle(x).textOverflow === 'ellipsis');
  const card = [...main.querySelectorAll('[class*="st-key-worked-"]')].pop();
  const next = main.querySelector('.st-key-worked_next');
  return {
    overflow: main.scrollWidth - main.clientWidth,
    charts: [...main.querySelectorAll("CHARTS, .st-key-stage iframe")].map(box),
    cut: [...main.querySelectorAll('button, label, [data-testid="stMetricLabel"]')].filter(cut)
           .map(e => e.innerText.trim().replace(/\\s+/g, ' ')),
    step: card && next ? {top: box(card).top, bottom: box(next).bottom} : null,
  };
}""".replace("CHARTS", CHARTS)
CHARTS_DRAWN = """() => [...document.querySelectorAll("CHARTS")]
                   .every(chart => chart.querySelector('canvas, svg'))""".replace("CHARTS", CHARTS)


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("path", list(DEFAULTS), ids=[p or "home" for p in DEFAULTS])
def test_presenter_mode_fits_every_page(new_tab, app_url, path, size):
    width, height = size
    page = new_tab(width, height)
    page.goto(f"{app_url}/{path}?presenter=1")
    settle(page, quiet_ms=2500)
    page.wait_for_function(CHARTS_DRAWN, timeout=30_000)
    fit = page.evaluate(PAGE_FIT)
    print(f"\n{path or 'home'} at {width}x{height}: {json.dumps(fit)}")
    assert fit["overflow"] <= 0                                    # nothing wider than the screen
    for chart in fit["charts"]:                                    # each chart whole on a screen
        assert chart["right"] <= width and chart["height"] <= height - HEADER_ROOM_PX, chart
    assert fit["cut"] == []                                        # no "CS…", no "Next step: 2. A…"
    if fit["step"]:                                                # a worked step and its Next
        assert fit["step"]["bottom"] - fit["step"]["top"] <= height - HEADER_ROOM_PX


LANES = """() => {
  const c = document.querySelector('#chart').getBoundingClientRect();
  const lane = (name) => { const b = window.playerViewBox(name);
    return {left: Math.round(c.left + b.left), top: Math.round(c.top + b.top),
            right: Math.round(c.left + b.left + b.width), bottom: Math.round(c.top + b.top + b.height)}; };
  const chart = document.querySelector('#chart');
  return {unchunked: lane('unchunked_heading_view'), unchunked_end: lane('unchunked_new_view'),
          chunked: lane('chunked_heading_view'), chunked_end: lane('chunked_new_view'),
          canvas_width: Math.round(document.querySelector('#chart canvas').getBoundingClientRect().width),
          overflow: chart.scrollWidth - chart.clientWidth};
}"""
DESKTOPS = [(1440, 900), (1920, 1080)]


@pytest.mark.parametrize("size", DESKTOPS, ids=[f"{w}x{h}" for w, h in DESKTOPS])
def test_side_by_side_shows_its_lanes_beside_each_other_on_the_first_screen(new_tab, app_url, size):
    width, height = size
    page = new_tab(width, height)
    page.goto(f"{app_url}/side_by_side")
    frame = ready_player(page)
    player = page.locator(".st-key-stage iframe").bounding_box()
    lanes = frame.evaluate(LANES)
    how = page.get_by_text("How to read it").bounding_box()
    print(f"\nside by side at {width}x{height}: player {json.dumps(player)}, lanes {json.dumps(lanes)}")
    assert lanes["chunked"]["left"] >= lanes["unchunked_end"]["right"]         # beside each other
    for end in ("unchunked_end", "chunked_end"):                                # both whole on
        assert player["y"] + lanes[end]["bottom"] <= height                   # the first screen
    assert player["y"] + player["height"] <= height
    assert lanes["overflow"] <= 0 and player["x"] + player["width"] <= width
    assert lanes["canvas_width"] >= 0.85 * player["width"]                     # the page's width
    assert how["y"] + how["height"] <= player["y"]                             # read it, then play
    assert "Above, left: the unchunked baseline" in page.locator('[data-testid="stMain"]').inner_text()


# counts the page's script runs: each time the app's state leaves "running"
COUNT_RUNS = """window.__runs = 0;
new MutationObserver(() => {
  const running = document.querySelector("[data-test-script-state='running']") !== null;
  if (window.__running && !running) window.__runs += 1;
  window.__running = running;
}).observe(document, {subtree: true, attributes: true, attributeFilter: ["data-test-script-state"]});"""
FRESH = [(1440, 900), (1280, 720), (1920, 1080), (1024, 768)]


@pytest.mark.parametrize("size", FRESH, ids=[f"{w}x{h}" for w, h in FRESH])
def test_a_fresh_visit_to_side_by_side_runs_its_script_once(new_tab, app_url, size):
    """The page tells its first run the window's size (a cookie written before Streamlit
    connects: ui/shell/server.py), the run fits the lanes to the main column it implies (ui/shell/presenter.py
    `guessed_room`, ui/shell/streamlit_internals.py `main_column_px`), and the browser's report of the
    real room then finds the figure as it would draw it: no second run redrawing the player. The
    stage is as wide as guessed; the lanes' fit on the first screen is the test above's."""
    width, height = size
    page = new_tab(width, height)
    page.add_init_script(COUNT_RUNS)
    page.goto(f"{app_url}/side_by_side")
    ready_player(page)
    stage = page.locator(".st-key-stage").bounding_box()
    assert round(stage["width"]) == main_column_px(width)
    assert page.evaluate("window.__runs") == 1
