"""Presenter mode on a projector, measured by element boxes in Chromium at the two projector sizes
(1920x1080, 1280x720), opened from a link (`?presenter=1`). On Home and Side by side: the sidebar
closed, no empty header space, the four key numbers and both lanes of the timeline on the first
screen, the player's controls on one line, 24 px text, 18 px chart labels drawn at that size,
large tooltips. On every page: nothing wider than the screen, every chart whole on one screen,
no button or label cut short with "…", the worked example's step on one screen with its Next, and
each page's main figure wholly on the first screen (Fidelity's: its titles apart), and the
heading it leaves behind clear of the words under it.
Outside presenter mode, Side by side at 1440x900 and 1920x1080: both lanes beside each other on
the first screen, as wide as the page, how to read them above; a fresh visit in a desktop window
runs the page's script once. `pytest -s` prints the boxes."""

import json

import pytest

from charts.fidelity import TP_DEGREES
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


def every_page_and_size(test):
    """Run `test(new_tab, app_url, path, size)` on every page the tests visit, at each size."""
    on_every_size = pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
    return on_every_size(pytest.mark.parametrize("path", list(DEFAULTS),
                                                 ids=[p or "home" for p in DEFAULTS])(test))


def projected(new_tab, app_url, path: str, size: tuple[int, int]):
    """The page at `path` opened in presenter mode in a window of `size`."""
    page = new_tab(*size)
    page.goto(f"{app_url}/{path}?presenter=1")
    return page


@every_page_and_size
def test_presenter_mode_fits_every_page(new_tab, app_url, path, size):
    width, height = size
    page = projected(new_tab, app_url, path, size)
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


# Each page's main figure (what the page draws in ui/shell/presenter.py `figure`, or its stage),
# by its chart's key: on a projector wholly on the first screen, under the page's heading.
MAIN_FIGURES = {"": ".st-key-stage iframe", "side_by_side": ".st-key-stage iframe",
                "worked_example": ".st-key-chart_worked_prefill .lab-chart",   # step 3's
                "roofline": ".st-key-chart_roofline .lab-chart",
                "exactness": ".st-key-chart_exactness .lab-chart",
                "budget_tradeoff": ".st-key-chart_budget-frontier .lab-chart",
                "traffic": ".st-key-chart_traffic-timeline .lab-chart",
                "long_short": ".st-key-chart_long-short-timeline .lab-chart",
                "prefix_caching": ".st-key-chart_prefix-caching .lab-chart",
                "capacity": ".st-key-chart_capacity .lab-chart",
                "memory": ".st-key-chart_kv-memory .lab-chart",
                "disaggregation": ".st-key-main-figure iframe",   # the lanes' player
                "pipeline": ".st-key-main-figure iframe",   # the stages' player
                "fidelity": ".st-key-chart_fidelity-times .lab-chart"}
# every text of a drawn chart with its box in the chart's pixels: its Vega scene graph walked
# from the root, each group's offset added to what it holds
CHART_TEXTS = """(selector) => {
  const texts = [];
  const walk = (mark, dx, dy) => {
    for (const item of mark.items || []) {
      if (mark.marktype === 'group') {
        for (const inner of item.items || []) walk(inner, dx + (item.x || 0), dy + (item.y || 0));
      } else if (mark.marktype === 'text' && item.text && item.bounds && !item.bounds.empty()) {
        const b = item.bounds;
        texts.push({role: mark.role, text: [].concat(item.text).join(' '),
                    x1: dx + b.x1, y1: dy + b.y1, x2: dx + b.x2, y2: dy + b.y2});
      }
    }
  };
  walk(document.querySelector(selector).view.scenegraph().root, 0, 0);
  return texts;
}"""


def test_every_page_has_its_main_figure_named():
    assert set(MAIN_FIGURES) == set(DEFAULTS)   # a page added to the path names its figure here


def main_figure_box(page, path: str) -> dict:
    """The page's main figure, drawn, in a settled page: its box in the window."""
    settle(page, quiet_ms=2500)
    if path == "worked_example":   # a step on: the figure is the step's, shown as the last
        for _ in range(2):
            page.locator(".st-key-worked_next button").click()
            settle(page, quiet_ms=1500)
    find = page.get_by_role("button", name="Find the capacity")
    if path == "capacity" and find.count():   # the figure is the search's result, found on
        find.click()                          # request (seconds), then kept for the session's
        settle(page, quiet_ms=2500, timeout_s=120)   # server: a second visit shows it at once
    figure = page.locator(MAIN_FIGURES[path])
    if path in ("", "side_by_side", "disaggregation", "pipeline"):
        figure.element_handle().content_frame().wait_for_function("window.playerReady === true",
                                                                  timeout=30_000)
    else:
        figure.locator("canvas").wait_for(timeout=30_000)
    return figure.bounding_box()


@every_page_and_size
def test_each_pages_main_figure_is_on_the_first_screen(new_tab, app_url, path, size):
    width, height = size
    page = projected(new_tab, app_url, path, size)
    box = main_figure_box(page, path)
    heading = page.locator('[data-testid="stMain"] h1, [data-testid="stMain"] h2').first.bounding_box()
    print(f"\n{path or 'home'} at {width}x{height}: the figure {json.dumps(box)}, the heading "
          f"{json.dumps(heading)}")
    assert box["y"] >= 0 and box["y"] + box["height"] <= height, box   # wholly on the first
    assert box["x"] >= 0 and box["x"] + box["width"] <= width, box     # screen ...
    assert heading["y"] + heading["height"] <= box["y"]                # ... under the heading


def overlapping(texts: list[dict]) -> list[tuple[str, str]]:
    """The pairs of texts whose boxes overlap (by more than a pixel each way)."""
    return [(a["text"], b["text"]) for i, a in enumerate(texts) for b in texts[i + 1:]
            if min(a["x2"], b["x2"]) - max(a["x1"], b["x1"]) > 1
            and min(a["y2"], b["y2"]) - max(a["y1"], b["y1"]) > 1]


@pytest.mark.parametrize("presenter", [True, False], ids=["presenter", "page"])
def test_fidelitys_facet_titles_stand_apart(new_tab, app_url, presenter):
    """The measured-vs-predicted facets: each panel's header, its axes' titles, the chart's title
    and legend, none over another."""
    page = new_tab(1280, 720)
    page.goto(f"{app_url}/fidelity" + ("?presenter=1" if presenter else ""))
    main_figure_box(page, "fidelity")
    texts = [t for t in page.evaluate(CHART_TEXTS, MAIN_FIGURES["fidelity"])
             if t["role"] in ("axis-title", "title-text", "title-subtitle", "legend-label")]
    print(f"\n{json.dumps(texts)}")
    assert sum(t["role"] == "axis-title" for t in texts) == 4                 # two rows, two columns
    assert sum(t["text"].startswith("TP = ") for t in texts) == len(TP_DEGREES)   # the headers
    assert overlapping(texts) == []


# the page-wide charts whose plot width follows the main column (ui/shell/presenter.py
# `chart_width`): on a 1280 px laptop, the page's column is narrower than CHART_WIDTH and its axes
WIDE_FIGURES = ("traffic", "memory", "long_short", "prefix_caching")


@pytest.mark.parametrize("path", WIDE_FIGURES)
def test_a_page_wide_chart_is_drawn_whole_in_its_column_at_1280_px(new_tab, app_url, path):
    """Outside presenter mode, at 1280x720: the chart's canvas is no wider than the box it is
    drawn in (a wider one lost its right edge, the end of the run, to the column)."""
    page = new_tab(1280, 720)
    page.goto(f"{app_url}/{path}")
    box = main_figure_box(page, path)
    canvas = page.locator(MAIN_FIGURES[path]).locator("canvas").bounding_box()
    assert canvas["x"] >= box["x"] and canvas["x"] + canvas["width"] <= box["x"] + box["width"] + 1, (
        canvas, box)


LEFT_HEADING = """() => {
  const figure = document.querySelector('.st-key-main-figure').parentElement;
  const heading = figure.previousElementSibling.querySelector(':scope > [data-testid="stHeading"] h3');
  if (!heading) return null;
  const words = document.createRange(); words.selectNodeContents(heading);
  const block = figure.parentElement, top = (e) => e.getBoundingClientRect().top;
  const below = [...block.children].filter(e => e.getBoundingClientRect().height > 0
                                               && top(e) > top(heading)).sort((a, b) => top(a) - top(b));
  return {heading: heading.textContent, words_bottom: words.getBoundingClientRect().bottom,
          next: below[0].textContent.slice(0, 60), next_top: top(below[0])};
}"""


@pytest.mark.parametrize("path", ["traffic", "long_short", "prefix_caching", "disaggregation",
                                  "pipeline"])
def test_a_heading_the_figure_left_behind_keeps_off_the_words_under_it(new_tab, app_url, path):
    """On a projector the main figure goes first; the heading that stood above it stays with the
    words it heads (the figure's caption), its own words clear of theirs."""
    page = projected(new_tab, app_url, path, (1280, 720))
    main_figure_box(page, path)
    left = page.evaluate(LEFT_HEADING)
    print(f"\n{path}: {json.dumps(left)}")
    assert left is not None and left["next_top"] >= left["words_bottom"], left
