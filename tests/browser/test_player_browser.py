"""The player in Debian's Chromium: offline, plays, pauses, scrubs, steps, keyboard; and inside a
real `streamlit run` with the bundle served as a static file.

Most tests drive Playwright's paused fake clock (`page.clock`), which also runs
requestAnimationFrame, so "one second of play" is exact instead of racing a 2-core machine.
"""

import json
import math
import os
import re
from pathlib import Path

import pytest
import vl_convert

from charts.player import player_html, vega_bundle, vega_bundle_name
from harness.server import streamlit_server
from tests.support.charts import seed_chart

REPO = Path(__file__).resolve().parents[2]
PLAYER_JS = REPO / "charts" / "player" / "player.js"
SMALL = dict(decodes=8, decode_output=64, prompt=2048, prompt_output=8)
RATE = 100.0   # simulated ms per wall-clock second
# Frames land every ~16.7 ms and the first frame of a play only starts the wall clock, so up to
# two frames of any window of play are not counted.
SLACK_MS = 2 * 17


@pytest.fixture(scope="module")
def chart():
    return seed_chart(**SMALL)


@pytest.fixture(scope="module")
def page_file(chart, tmp_path_factory):
    spec, t_max, bounds = chart
    path = tmp_path_factory.mktemp("player") / "player.html"
    path.write_text(player_html(spec, t_max=t_max, boundaries=bounds, ms_per_second=RATE,
                                key="test-view", cue="Watch the rows"), encoding="utf-8")
    return path


class Offline:
    """A browser context that lets file:// through, aborts everything else and remembers it."""

    def __init__(self, browser, base="file:"):
        self.blocked, self.errors = [], []
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.context.route("**/*", self._route)
        self.base = base

    def _route(self, route):
        url = route.request.url
        if url.startswith(self.base):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def page(self):
        page = self.context.new_page()
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        return page


@pytest.fixture
def offline(browser):
    net = Offline(browser)
    yield net
    net.context.close()


@pytest.fixture
def player(offline, page_file):
    """A loaded player page on the fake clock."""
    page = offline.page()
    page.clock.install()
    page.goto(page_file.as_uri())
    page.wait_for_function("window.playerReady === true", timeout=20_000)
    # From here on, time moves only in run_for: no real time leaks in between two steps.
    page.clock.pause_at(page.evaluate("() => Date.now()") + 1000)
    return page


def state(page):
    return page.evaluate("() => ({...window.playerState, signal: window.playerSignal()})")


def test_renders_offline_without_errors(player, offline):
    assert player.locator("#chart canvas").count() == 1
    assert state(player) == {"t": 0, "playing": False, "signal": 0}
    assert offline.blocked == []
    assert offline.errors == []
    assert player.evaluate("() => window.playerError") is None


def test_the_bundle_has_everything_the_player_calls(browser):
    """The page ships Vega alone (no Vega-Lite, no Vega-Embed): each `vega.<name>` player.js
    uses is in it."""
    used = sorted(set(re.findall(r"\bvega\.(\w+)", PLAYER_JS.read_text(encoding="utf-8"))))
    assert {"View", "parse"} <= set(used)
    page = browser.new_page()
    try:
        page.set_content(f"<script>{vega_bundle()}</script>")
        missing = page.evaluate("names => names.filter(n => !window.vega || !(n in window.vega))",
                                used)
    finally:
        page.close()
    assert missing == []


def _same(a, b) -> bool:
    """Equal, floats to their last bits (the server's JSON may round 15.399999999999999 to 15.4)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, int | float) and isinstance(b, int | float) and math.isclose(a, b)
    return a == b


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_the_chart_compiled_on_the_server_is_the_one_vega_embed_drew(browser, chart, dark):
    """The spec compiled here (theme, transparent background) is the Vega spec Vega-Embed
    compiled in the browser before, with the options the player gave it."""
    spec, t_max, _ = chart
    html = player_html(spec, t_max=t_max, dark=dark)
    served = json.loads(re.search(r'<script id="player-spec" type="application/json">(.*?)</script>',
                                  html, re.S).group(1))
    page = browser.new_page()
    try:
        page.set_content(f'<div id="chart"></div><script>{vl_convert.javascript_bundle()}</script>')
        embedded = page.evaluate("""([spec, dark]) => new Promise(done => vegaEmbed("#chart", spec, {
            actions: false, renderer: "canvas", theme: dark ? "dark" : undefined,
            config: {background: "transparent"},
            patch: vega => { done(JSON.parse(JSON.stringify(vega))); return vega; }}))""",
                                 [spec, dark])
    finally:
        page.close()
    assert _same(served, embedded)


def _bar_tooltip_titles(spec) -> list[str]:
    """The titles of the timeline bars' tooltip fields, in order, as the chart declares them."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            tips = node.get("tooltip")
            if isinstance(tips, list) and any(t.get("title") == "duration (ms)" for t in tips):
                found.append([t["title"] for t in tips])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(spec)
    return found[0]


@pytest.mark.parametrize("height, scaled", [(1100, False), (420, True)],
                         ids=["as-drawn", "scaled-to-fit"])
def test_hovering_a_bar_shows_its_fields_beside_the_pointer(offline, chart, tmp_path, height,
                                                             scaled):
    """As drawn, and scaled down to fit a short frame (a projector's): the pointer finds the bar
    under it either way."""
    spec, t_max, bounds = chart
    path = tmp_path / "player.html"
    path.write_text(player_html(spec, t_max=t_max, boundaries=bounds, height=height),
                    encoding="utf-8")
    player = offline.page()
    player.set_viewport_size({"width": 1280, "height": 1150})   # room for the tooltip
    player.goto(path.as_uri())
    player.wait_for_function("window.playerReady === true", timeout=20_000)
    zoom = player.evaluate("() => Number(document.querySelector('#chart canvas').style.zoom)")
    assert (zoom < 0.9) if scaled else (zoom == 1)
    player.get_by_test_id("player-scrub").fill(repr(t_max))   # every bar drawn
    player.wait_for_function(f"window.playerSignal() === {t_max!r}", timeout=5_000)
    point = player.evaluate("""() => { const b = window.playerViewBox('chunked_bars_view'),
                                        c = document.querySelector('#chart').getBoundingClientRect();
                                        return {x: Math.round(c.left + b.left + b.width * 0.1),
                                                y: Math.round(c.top + b.top + b.height * 0.6)}; }""")
    player.mouse.move(point["x"], point["y"])
    tooltip = player.locator("#vg-tooltip-element.visible")
    tooltip.wait_for(timeout=5_000)
    keys = tooltip.locator("td.key").all_inner_texts()
    assert keys == _bar_tooltip_titles(spec)
    assert all(v.strip() for v in tooltip.locator("td.value").all_inner_texts())
    box = tooltip.bounding_box()
    assert (box["x"], box["y"]) == (point["x"] + 10, point["y"] + 10)   # below right of it
    assert "light-theme" in tooltip.get_attribute("class")
    player.mouse.move(2, 2)   # off every mark
    player.wait_for_function("!document.querySelector('#vg-tooltip-element.visible')",
                             timeout=5_000)


def test_the_tooltip_escapes_its_text_and_stays_in_the_window(player):
    """Any text in a tooltip is shown as text; a box that would leave the window by the pointer
    goes above left of it, and one that fits at no corner of it (taller than the room above and
    below) goes beside it, inside the window and clear of the pointer, right of it where there is
    room, else left; nothing to show hides it."""
    shown = player.evaluate("""() => {
        const show = window.playerTooltip("dark"), x = innerWidth - 5, y = innerHeight - 5;
        show(null, {clientX: x, clientY: y}, null,
             {title: "<b>T</b>", "a & b": "<i>1</i>", nested: {x: 1}, gone: undefined});
        const el = document.getElementById("vg-tooltip-element"), box = el.getBoundingClientRect();
        const seen = {html: el.innerHTML, classes: el.className, left: box.left, top: box.top,
                      right: x - 10 - box.width, bottom: y - 10 - box.height,
                      background: getComputedStyle(el).backgroundColor};
        show(null, {clientX: x, clientY: 5}, null, {short: "a"});   // top right: below left
        const corner = el.getBoundingClientRect();
        seen.topRight = [corner.left - (x - 10 - corner.width), corner.top - 15];
        show(null, {clientX: 200, clientY: 5}, null, {short: "a"});   // room all round: below right
        const middle = el.getBoundingClientRect();
        seen.topLeft = [middle.left - 210, middle.top - 15];
        const rows = {};   // rows until the box is taller than the room above or below the middle
        do { rows["row " + Object.keys(rows).length] = 1;
             show(null, {clientX: 300, clientY: innerHeight / 2}, null, rows);
        } while (el.getBoundingClientRect().height <= innerHeight / 2);
        const tall = el.getBoundingClientRect();
        seen.tall = [tall.left - 310, tall.top, innerHeight - tall.bottom, tall.height - innerHeight / 2];
        show(null, {clientX: innerWidth - 20, clientY: innerHeight / 2}, null, rows);   // near the right edge
        const leftOf = el.getBoundingClientRect();
        seen.tallLeft = [innerWidth - 30 - leftOf.right, leftOf.top, innerHeight - leftOf.bottom];
        show(null, {clientX: x, clientY: y}, null, null);
        seen.hidden = getComputedStyle(el).visibility;
        return seen; }""")
    assert shown["html"] == ('<h2>&lt;b&gt;T&lt;/b&gt;</h2><table><tbody>'
                             '<tr><td class="key">a &amp; b</td><td class="value">&lt;i&gt;1&lt;/i&gt;</td></tr>'
                             '<tr><td class="key">nested</td><td class="value">{"x":1}</td></tr>'
                             '</tbody></table>')
    assert set(shown["classes"].split()) == {"vg-tooltip", "visible", "dark-theme"}
    assert abs(shown["left"] - shown["right"]) < 0.1 and abs(shown["top"] - shown["bottom"]) < 0.1
    assert all(abs(d) < 0.1 for d in shown["topRight"] + shown["topLeft"])
    assert shown["tall"][3] > 0   # taller than half the window: no corner holds it
    assert abs(shown["tall"][0]) < 0.1 and min(shown["tall"][1:3]) >= 0   # right of the pointer, inside
    assert abs(shown["tallLeft"][0]) < 0.1 and min(shown["tallLeft"][1:]) >= 0   # left of it
    assert shown["background"] == "rgba(32, 32, 32, 0.9)"
    assert shown["hidden"] == "hidden"


def test_play_advances_at_the_chosen_rate_and_pause_holds(player):
    player.get_by_test_id("player-play").click()
    player.clock.run_for(1000)
    s = state(player)
    assert s["playing"] is True
    assert (1000 - SLACK_MS) * RATE / 1e6 <= s["t"] <= 1000 * RATE / 1e6
    assert s["signal"] == s["t"]            # the chart holds the same clock
    player.get_by_test_id("player-play").click()
    paused = state(player)
    player.clock.run_for(1000)
    assert paused["playing"] is False
    assert state(player) == paused


def test_the_speed_list_sets_the_rate(player):
    player.get_by_test_id("player-speed").select_option("250")
    player.get_by_test_id("player-play").click()
    player.clock.run_for(500)
    assert (500 - SLACK_MS) * 250 / 1e6 <= state(player)["t"] <= 500 * 250 / 1e6


def test_the_cue_shows_until_playback_starts(player):
    cue = player.get_by_test_id("player-cue")
    assert cue.is_visible() and cue.inner_text() == "Watch the rows"
    player.get_by_test_id("player-play").click()
    player.clock.run_for(100)
    assert not cue.is_visible()


def _reloaded(page):
    page.reload()
    page.wait_for_function("window.playerReady === true", timeout=20_000)
    return state(page)


def test_position_speed_and_playing_survive_a_reload(player, chart):
    """A Streamlit rerun rebuilds the player's frame: it must carry on where it was."""
    _, t_max, _ = chart
    player.get_by_test_id("player-scrub").fill(repr(t_max / 3))
    player.get_by_test_id("player-speed").select_option("50")
    again = _reloaded(player)
    assert again["t"] == pytest.approx(t_max / 3, rel=1e-12) and again["playing"] is False
    assert again["signal"] == again["t"]
    assert player.get_by_test_id("player-speed").input_value() == "50"
    assert not player.get_by_test_id("player-cue").is_visible()   # not at the start any more
    player.get_by_test_id("player-play").click()
    player.clock.run_for(400)
    playing = _reloaded(player)
    assert playing["playing"] is True and playing["t"] >= t_max / 3 + (400 - SLACK_MS) * 50 / 1e6


def test_stops_at_the_end_and_play_restarts_from_zero(player, chart):
    _, t_max, _ = chart
    player.get_by_test_id("player-scrub").fill(repr(t_max - 0.01))
    player.get_by_test_id("player-play").click()
    player.clock.run_for(1000)   # 0.1 simulated s: well past the end
    assert state(player) == {"t": t_max, "playing": False, "signal": t_max}
    assert player.get_by_test_id("player-play").get_attribute("aria-label") == "Play"
    player.get_by_test_id("player-play").click()
    player.clock.run_for(100)
    s = state(player)
    assert s["playing"] is True and 0 < s["t"] <= 100 * RATE / 1e6


@pytest.fixture(scope="module")
def freezing_page(tmp_path_factory):
    """A player whose unchunked lane freezes: eight streams beside a whole 8,192-token prompt."""
    spec, t_max, bounds = seed_chart(decodes=8, decode_output=64, prompt=8192, prompt_output=8)
    path = tmp_path_factory.mktemp("freezing") / "player.html"
    path.write_text(player_html(spec, t_max=t_max, boundaries=bounds, ms_per_second=RATE),
                    encoding="utf-8")
    return path, t_max


def counter_texts_shown(page, lane="unchunked") -> dict[str, list[str]]:
    """What the lane's counters draw now, from the scene Vega drew in the browser."""
    return {part: [d.get("text", d.get("froze")) for d in page.evaluate(
        f"() => window.playerMarks('{lane}_{part}')")]
        for part in ("frozen", "end_counter", "largest")}


def test_played_to_the_end_the_counter_says_what_happened(offline, freezing_page):
    """While it plays the counter is live, each time in the lab's one format (Chromium's d3 and
    Python's fmt_seconds agree: "223.9 ms" in both counters); played to its end it says how many
    streams froze and for how long, not "no stream frozen" beside the red rows."""
    path, t_max = freezing_page
    page = offline.page()
    page.clock.install()
    page.goto(path.as_uri())
    page.wait_for_function("window.playerReady === true", timeout=20_000)
    page.clock.pause_at(page.evaluate("() => Date.now()") + 1000)
    page.get_by_test_id("player-scrub").fill("0.22394")
    page.wait_for_function("window.playerSignal() === 0.22394")
    page.clock.run_for(50)
    assert counter_texts_shown(page) == {"frozen": ["streams frozen for 223.9 ms"],
                                         "end_counter": [], "largest": ["largest gap so far 223.9 ms"]}
    page.get_by_test_id("player-play").click()
    page.clock.run_for(int(t_max * 1e6 / RATE) + 1000)   # past the end at RATE ms/s
    assert state(page)["t"] == t_max and state(page)["playing"] is False
    page.clock.run_for(50)
    end = counter_texts_shown(page)
    # the whole prompt's pass and the iteration after it (sim.studies.stalls, the metric cards)
    assert end["frozen"] == [] and end["end_counter"] == ["8 streams froze, up to 336.6 ms"]
    assert counter_texts_shown(page, "chunked")["end_counter"] == ["no stream froze"]
    assert offline.errors == []


def test_scrub_sets_the_clock(player, chart):
    _, t_max, _ = chart
    player.get_by_test_id("player-scrub").fill(repr(t_max / 3))
    s = state(player)
    assert s["t"] == pytest.approx(t_max / 3, rel=1e-12)
    assert s["signal"] == s["t"]
    assert player.get_by_test_id("player-clock").inner_text() == f"{t_max / 3 * 1000:,.1f}"


def test_arrows_and_step_buttons_move_between_boundaries(player, chart):
    _, t_max, bounds = chart
    bounds = [b for b in bounds if b > 0]   # the clock starts at 0: the first stop is after it
    # A fresh page: the keys go to the document body, not to a control.
    player.keyboard.press("ArrowRight")
    assert state(player)["t"] == bounds[0]
    player.keyboard.press("ArrowRight")
    assert state(player)["t"] == bounds[1]
    player.keyboard.press("ArrowLeft")
    assert state(player)["t"] == bounds[0]
    player.get_by_test_id("player-scrub").fill(repr((bounds[4] + bounds[5]) / 2))
    player.get_by_test_id("player-step-forward").click()
    assert state(player)["t"] == bounds[5]
    player.get_by_test_id("player-step-back").click()
    player.get_by_test_id("player-step-back").click()
    assert state(player)["t"] == bounds[3]
    player.get_by_test_id("player-scrub").fill(repr(bounds[-1]))
    player.get_by_test_id("player-step-forward").click()
    assert state(player)["t"] == t_max


def test_space_toggles_play(player):
    player.keyboard.press(" ")
    player.clock.run_for(200)
    assert state(player)["playing"] is True
    player.keyboard.press(" ")
    held = state(player)
    player.clock.run_for(200)
    assert held["playing"] is False and held["t"] > 0
    assert state(player) == held
    player.get_by_test_id("player-play").click()   # focus on the button: space clicks it once
    player.keyboard.press(" ")
    assert state(player)["playing"] is False


def test_real_time_play_and_pause(offline, page_file):
    """Once on the real clock: what a user sees in ~0.5 s."""
    page = offline.page()
    page.goto(page_file.as_uri())
    page.wait_for_function("window.playerReady === true", timeout=20_000)
    page.get_by_test_id("player-play").click()
    page.wait_for_timeout(500)
    moving = state(page)
    assert moving["playing"] is True and moving["t"] > 0
    page.get_by_test_id("player-play").click()
    held = state(page)
    page.wait_for_timeout(300)
    assert held["t"] > moving["t"]
    assert state(page) == held
    assert offline.blocked == [] and offline.errors == []


STREAMLIT_APP = """
from charts.player import player_html
from tests.support.charts import seed_chart
from ui.learn.player import show_player
spec, t_max, bounds = seed_chart(decodes=8, decode_output=64, prompt=2048, prompt_output=8)
show_player(player_html(spec, t_max=t_max, boundaries=bounds), height=700)
"""


@pytest.fixture(scope="module")
def streamlit_url(tmp_path_factory):
    folder = tmp_path_factory.mktemp("app")
    (folder / "app.py").write_text(STREAMLIT_APP)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with streamlit_server(folder / "app.py", folder / "server.log",
                          "--server.enableStaticServing=true", "--global.developmentMode=false",
                          env=env) as url:
        yield url


def test_plays_inside_streamlit_with_the_static_bundle(browser, streamlit_url):
    net = Offline(browser, base=streamlit_url)
    try:
        page = net.page()
        bundle = []
        page.on("response", lambda r: r.url.endswith(".js") and "app/static" in r.url
                and bundle.append((r.url, r.status)))
        page.goto(streamlit_url)
        frame = page.wait_for_selector("iframe", timeout=30_000).content_frame()
        frame.wait_for_function("window.playerReady === true", timeout=30_000)
        assert bundle == [(f"{streamlit_url}/app/static/{vega_bundle_name()}", 200)]
        srcdoc = page.locator("iframe").get_attribute("srcdoc")
        assert 'src="/app/static/' in srcdoc and "window.vegaEmbed=" not in srcdoc
        frame.get_by_test_id("player-play").click()
        page.wait_for_timeout(500)
        moving = frame.evaluate("() => ({...window.playerState})")
        assert moving["playing"] is True and moving["t"] > 0
        assert net.blocked == []
        assert net.errors == []
    finally:
        net.context.close()


def test_save_frame_downloads_the_chart_as_drawn_at_the_clock(player, offline):
    """"Save frame" is the chart at the player's clock, named by it: not the end of the run."""
    def saved(name_part):
        with player.expect_download(timeout=20_000) as download:
            player.get_by_test_id("player-save-frame").click()
        assert name_part in download.value.suggested_filename
        return Path(download.value.path()).read_bytes()

    player.get_by_test_id("player-step-forward").click()
    player.clock.run_for(200)
    t_ms = player.evaluate("() => window.playerState.t * 1000")
    early = saved(f"chart_t-{t_ms:.1f}ms.png")
    player.get_by_test_id("player-step-forward").click()
    player.clock.run_for(200)
    later = saved("chart_t-")
    assert early.startswith(b"\x89PNG") and later.startswith(b"\x89PNG") and early != later
    assert offline.blocked == [] and offline.errors == []


def test_the_keys_work_from_the_app_page_before_any_click_into_the_player(browser, app_url):
    """A keyboard user (or a presenter who just opened the link) presses → on the page: the
    player steps; the same key in one of the page's own fields stays with that field."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        page.goto(f"{app_url}/side_by_side")
        frame = page.wait_for_selector("iframe", timeout=30_000).content_frame()
        frame.wait_for_function("window.playerReady === true", timeout=30_000)
        page.locator("iframe").scroll_into_view_if_needed()
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        clock = frame.get_by_test_id("player-clock")
        assert clock.inner_text() == "0.0"
        page.keyboard.press("ArrowRight")
        frame.wait_for_function("window.playerState.t > 0", timeout=5_000)
        stepped = clock.inner_text()
        decodes = page.get_by_label("Running streams", exact=True)
        decodes.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(300)
        assert clock.inner_text() == stepped
        page.locator("iframe").scroll_into_view_if_needed()
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        page.keyboard.press(" ")
        frame.wait_for_function("window.playerState.playing === true", timeout=5_000)
    finally:
        context.close()
