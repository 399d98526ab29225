"""The app in Debian's Chromium: every page loads without an exception box, and a link round trip
restores the controls. Skipped when /usr/bin/chromium or Playwright is missing. (The player's own
play / pause / scrub test lives with charts.player.)"""

import io
import re
import zipfile
from pathlib import Path

import pytest
from PIL import Image
from playwright import sync_api

from charts.film import GIF_FRAMES
from harness.browser import download, has_value, wait_for_run
from harness.server import streamlit_server
from sim.units import fmt_seconds
from tests.browser.pages import DEFAULTS
from ui.shell import story

ROOT = Path(__file__).resolve().parents[2]
PAGES = DEFAULTS
# the defaults and the theme, as download names say them
SCENARIO = ("illustrative_dense-8b_prompt-8192_streams-64_context-4000_budget-576_vllm-v0-vs-sarathi_"
            "simple_light")


@pytest.fixture
def page(new_tab):
    return new_tab()


@pytest.mark.parametrize("path", list(PAGES))
def test_each_page_loads_without_an_exception(visited, path):
    page = visited(path)                     # its visit: harness/visit.py
    assert page.exceptions == 0
    assert page.prompt_value == "8192"


def test_link_round_trip_restores_the_controls(page, app_url):
    page.goto(f"{app_url}/side_by_side?prompt=4096&budget=1024")
    wait_for_run(page, "Side by side")
    has_value(page, "New prompt (tokens)", "4096")
    has_value(page, "Token budget per iteration", "1024")

    # a change in the page goes into the link ...
    decodes = page.get_by_label("Running streams", exact=True)
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
                         ("Running streams", "32")):
        has_value(fresh, label, value)


def test_controls_survive_moving_between_pages(page, app_url):
    page.goto(f"{app_url}/worked_example?prompt=4096")
    wait_for_run(page, "Worked example")
    # Streamlit 1.67 drops bound params (and the values) when a page link is clicked while the
    # session's first script run is still going (reproduced with a three-line app, not ours):
    # click only once the link's value is shown and the run that applied it has ended
    has_value(page, "New prompt (tokens)", "4096")
    wait_for_run(page, "Worked example")
    page.get_by_role("link", name="Roofline", exact=True).click()
    wait_for_run(page, "Roofline")
    assert "prompt=4096" in page.url
    has_value(page, "New prompt (tokens)", "4096")


@pytest.mark.parametrize("path, written, label, value", [
    ("worked_example?decodes=99999", "decodes=93", "Running streams", "93"),
    ("side_by_side?budget=12.7", "budget=13", "Token budget per iteration", "13"),
    ("side_by_side?prompt=99999999", "prompt=392736", "New prompt (tokens)", "392736"),
])
def test_a_corrected_link_value_is_written_into_the_address_bar(page, app_url, path, written, label,
                                                                 value):
    """The address bar after a correction reproduces the view: opened again it shows the same
    value, with no note. (4,096 decoders or a 2,000,000-token prompt do not fit the GPU's memory,
    so the clamp goes on to the most that fits.)"""
    page.goto(f"{app_url}/{path}")
    heading = PAGES[path.split("?")[0]]
    wait_for_run(page, heading)
    has_value(page, label, value)
    page.wait_for_url(f"**{written}", timeout=15_000)
    assert page.get_by_text("in the link", exact=False).count()
    fresh = page.context.new_page()
    fresh.goto(page.url)
    wait_for_run(fresh, heading)
    has_value(fresh, label, value)
    assert fresh.get_by_text("in the link", exact=False).count() == 0
    assert fresh.locator('[data-testid="stAlertContentError"]').count() == 0


def test_presenter_1_in_a_link_turns_presenter_mode_on(page, app_url):
    page.goto(f"{app_url}/side_by_side?presenter=1")
    wait_for_run(page, "Side by side")
    page.wait_for_url("**presenter=true", timeout=15_000)
    sync_api.expect(page.get_by_role("switch", name="Presenter mode (large fonts)")).to_be_checked()


def test_the_sidebar_lists_every_page_of_the_learners_path(page, app_url):
    """All pages as links, none folded behind Streamlit's "View more" (st.navigation's expanded):
    with fifteen pages the folded list hid Advanced and Teach."""
    page.goto(app_url)
    wait_for_run(page, "Chunked Prefill Lab")
    nav = page.locator('[data-testid="stSidebarNav"]')
    for entry in story.PAGES:
        sync_api.expect(nav.get_by_role("link", name=entry.title, exact=True)).to_be_visible()
    assert nav.get_by_text(re.compile(r"View \d+ more|View more")).count() == 0


def test_out_of_range_link_value_shows_a_note(page, app_url):
    page.goto(f"{app_url}/side_by_side?budget=0")
    wait_for_run(page, "Side by side")
    assert page.get_by_text("budget=“0” in the link", exact=False).count()
    has_value(page, "Token budget per iteration", "1")
    assert page.locator('[data-testid="stException"]').count() == 0


@pytest.mark.parametrize("kind, head, ext", [("png", b"\x89PNG", "png"), ("svg", b"<svg", "svg"),
                                             ("csv", b"PK\x03\x04", "zip"),
                                             ("json", b"{", "json")])
def test_chart_downloads(page, app_url, kind, head, ext):
    """Named by the scenario; the roofline's two tables come as a zip of two CSVs."""
    page.goto(f"{app_url}/roofline")
    wait_for_run(page, "Roofline")
    # the roofline chart's own button, by its key: a rerun can redraw the page's buttons in turn
    saved = download(page, "roofline", kind)
    assert saved.suggested_filename == f"roofline_{SCENARIO}.{ext}"
    data = Path(saved.path()).read_bytes()
    assert data.startswith(head)
    if kind == "csv":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            assert sorted(archive.namelist()) == ["points.csv", "roof.csv"]
            points = archive.read("points.csv").decode().splitlines()
        header = points[0].split(",")
        decode = dict(zip(header, points[1].split(",")))
        assert decode["tokens"] == "64"                            # an integer, not 64.0


def test_one_table_downloads_as_one_csv_and_names_follow_the_controls(page, app_url):
    page.goto(f"{app_url}/memory?gpu=h100-sxm&model=llama-3.1-8b&budget=1024")
    wait_for_run(page, "Memory")
    saved = download(page, "kv-memory", "csv")
    assert saved.suggested_filename == ("kv-memory_h100-sxm_llama-3.1-8b_prompt-8192_streams-64_context-4000_"
                                       "budget-1024_vllm-v0-vs-sarathi_"
                                       "simple_light.csv")
    rows = Path(saved.path()).read_text().splitlines()
    assert rows[0].startswith("policy,time_s,kv_tokens") and len(rows) > 2


def test_the_side_by_side_gif_from_the_app(page, app_url):
    """The animation as a GIF, every frame its canvas's size."""
    page.goto(f"{app_url}/side_by_side")
    wait_for_run(page, "Side by side")
    saved = download(page, "side-by-side", "gif")
    assert saved.suggested_filename == f"side-by-side_{SCENARIO}.gif"
    gif = Image.open(saved.path())
    assert gif.format == "GIF" and gif.n_frames == GIF_FRAMES
    sizes = set()
    for index in range(gif.n_frames):
        gif.seek(index)
        sizes.add(gif.convert("RGB").size)
    assert sizes == {gif.size}


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
    a subfolder of pages/ (app.py's docstring says why), and without a "Page not found" dialog
    over it (Streamlit's legacy pages/ mode, which serve.py turns off: ui/shell/server.py). Home's file
    name is a link too (app.py)."""
    with streamlit_server(ROOT / "serve.py", tmp_path / "server.log") as url:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        try:
            fresh = context.new_page()
            fresh.goto(f"{url}/roofline?prompt=4096")
            wait_for_run(fresh, "Roofline")
            assert fresh.locator('[data-testid="stSidebar"]').count() == 1
            has_value(fresh, "New prompt (tokens)", "4096")
            assert fresh.get_by_text("Page not found").count() == 0
            fresh.goto(f"{url}/home?decodes=32")     # Home's file name, typed: Home, its values kept
            wait_for_run(fresh, "Chunked Prefill Lab")
            has_value(fresh, "Running streams", "32")
            assert fresh.get_by_text("Page not found").count() == 0
        finally:
            context.close()


# --- the side-by-side player in the app ----------------------------------------------------------
UNCHUNKED_PREFILL_MS = 327.68   # the whole 8,192-token prompt at the defaults: its first token


def open_player(page, app_url):
    """Side by side at the defaults, its player ready (the app's root first: a deep link that is
    a fresh server's first request gets a "page not found" dialog from Streamlit)."""
    page.goto(app_url)
    wait_for_run(page, "Chunked Prefill Lab")
    page.goto(f"{app_url}/side_by_side")
    wait_for_run(page, "Side by side")
    frame = page.wait_for_selector("iframe", timeout=30_000).content_frame()
    frame.wait_for_function("window.playerReady === true", timeout=30_000)
    return frame


def pause_after(frame, t_s: float) -> float:
    """Play until the clock passes `t_s`, pause, and wait until the chart has drawn that moment."""
    frame.get_by_test_id("player-play").click()
    frame.wait_for_function(f"window.playerState.t >= {t_s}", timeout=30_000)
    frame.get_by_test_id("player-play").click()
    frame.wait_for_function("() => { var f = window.playerMarks('unchunked_frozen'); return "
                            "f.length && Math.abs(f[0].wait - window.playerState.t * 1000) < 1e-6; }",
                            timeout=10_000)
    return frame.evaluate("window.playerState.t")


def rows_covered(ticks) -> set[int]:
    return {row for tick in ticks for row in range(tick["row0"], tick["row1"])}


def test_inside_the_unchunked_prefill_every_stream_is_frozen_on_top_and_ticking_below(page, app_url):
    frame = open_player(page, app_url)
    now_ms = pause_after(frame, 0.12) * 1000
    assert 120 <= now_ms < UNCHUNKED_PREFILL_MS          # inside the whole-prompt iteration
    rows = set(range(64))                                # the defaults' 64 decoders, a row each

    def delivered(lane):    # the ticks drawn so far, less each stream's token from before t = 0
        return [t for t in frame.evaluate(f"window.playerMarks('{lane}_ticks_live')")
                if t["time_ms"] > 0]

    assert delivered("unchunked") == []                  # every unchunked row silent ...
    assert rows_covered(delivered("chunked")) == rows    # ... every chunked row has ticked
    assert all(t["time_ms"] <= now_ms for t in delivered("chunked"))
    waiting = frame.evaluate("window.playerMarks('unchunked_waiting')")
    assert rows_covered(waiting) == rows and {w["wait"] for w in waiting} == {now_ms}
    text = frame.evaluate("window.playerMarks('unchunked_frozen')")[0]["text"]
    assert 0 < now_ms and text == f"streams frozen for {fmt_seconds(now_ms / 1e3)}"   # as Python writes it
    largest = frame.evaluate("window.playerMarks('unchunked_largest')")[0]
    assert largest["largest"] == pytest.approx(now_ms)   # the gap callout grows with the stall
    chunked = frame.evaluate("window.playerMarks('chunked_largest')")[0]
    assert chunked["largest"] == pytest.approx(23.04)


def test_playback_position_and_speed_survive_a_sidebar_change(page, app_url):
    frame = open_player(page, app_url)
    frame.get_by_test_id("player-speed").select_option("50")
    t = pause_after(frame, 0.05)
    budget = page.get_by_label("Token budget per iteration", exact=True)
    budget.fill("640")
    budget.press("Enter")
    page.wait_for_url("**budget=640**", timeout=15_000)
    frame = page.wait_for_selector("iframe", timeout=30_000).content_frame()
    frame.wait_for_function("window.playerReady === true && "
                            "document.body.textContent.includes('budget 640')", timeout=30_000)
    assert frame.evaluate("({...window.playerState})") == {"t": t, "playing": False}
    assert frame.get_by_test_id("player-speed").input_value() == "50"
