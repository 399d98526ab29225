"""The Pipeline page in Chromium: it renders at 1280x720 without a horizontal scroll bar, its
controls round-trip through the link into a fresh tab, its stage chart downloads, and a bubble's
hover in the player shows the schedule's bubble worked out."""

from pathlib import Path

from playwright import sync_api

from harness.browser import (
    download,
    has_value,
    horizontal_overflow,
    hover_widest,
    player,
    wait_for_run,
)

HEADING = "Pipeline"


def test_the_page_renders_at_1280x720_without_a_horizontal_scroll(new_tab, app_url):
    page = new_tab(1280, 720)
    page.goto(f"{app_url}/pipeline")
    wait_for_run(page, HEADING)
    player(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert horizontal_overflow(page) <= 0
    assert page.get_by_text("idle the stages least here", exact=False).count() == 1


def test_a_link_round_trips_the_stages_the_link_and_the_chunking(new_tab, app_url):
    page = new_tab(1280, 720)
    page.goto(f"{app_url}/pipeline?pplink=100gbe&chunking=dynamic")
    wait_for_run(page, HEADING)
    stages = page.locator(".st-key-pp input")
    stages.fill("4")
    stages.press("Enter")
    page.wait_for_url("**pp=4**", timeout=15_000)
    assert "pplink=100gbe" in page.url and "chunking=dynamic" in page.url
    fresh = new_tab(1280, 720)                       # a new browser context: nothing carried
    fresh.goto(page.url)
    wait_for_run(fresh, HEADING)
    has_value(fresh, "Pipeline stages (pp)", "4")
    assert fresh.get_by_text("4 stages of 8/8/8/8 layers", exact=False).count() == 1
    assert fresh.get_by_text("activations sent over 100 Gb Ethernet (RoCE)",
                             exact=False).count() == 1


def test_the_stage_chart_downloads_as_png_and_csv(new_tab, app_url):
    page = new_tab(1280, 900)
    page.goto(f"{app_url}/pipeline")
    wait_for_run(page, HEADING)
    png = download(page, "pipeline-stages", "png")
    assert Path(png.path()).read_bytes().startswith(b"\x89PNG")
    csv = download(page, "pipeline-stages", "csv")
    assert csv.suggested_filename.endswith(".zip") or csv.suggested_filename.endswith(".csv")


def test_a_bubble_shows_the_bubbles_arithmetic_on_hover(new_tab, app_url):
    """The player opens at the run's end, everything drawn; the longest bubble hovered shows its
    schedule's bubble worked out."""
    page = new_tab(1440, 900)
    page.goto(f"{app_url}/pipeline")
    wait_for_run(page, HEADING)
    frame = player(page)
    at = hover_widest(page, frame, "rect", "idle_arithmetic")
    assert at["datum"]["schedule"] == "unchunked"   # the stage waiting out the whole prompt
    tooltip = frame.locator("#vg-tooltip-element.visible")
    sync_api.expect(tooltip).to_contain_text("stage idle time = stages × working time − busy")
    sync_api.expect(tooltip).to_contain_text(
        "2 × 1.694997 s − (1.531160 s + 1.529173 s) = 329.66 ms")
    sync_api.expect(tooltip).to_contain_text("329.66 ms / (2 × 1.694997 s) = 9.72%")


CLOCK_LINES = """() => {
  const found = [];
  const walk = (node) => {
    if (node.marktype === "rule") for (const it of node.items || [])
      if (it.datum && it.datum.now !== undefined) found.push({now: it.datum.now, opacity: it.opacity});
    for (const it of node.items || []) for (const child of it.items || []) walk(child);
  };
  walk(window.playerView.scenegraph().root);
  return found;
}"""


def test_the_clock_line_shows_while_playing_and_not_at_the_runs_end(new_tab, app_url):
    """The stages open drawn whole with no line at their right edge; a step back shows the teal
    line at the clock (charts.figure.clock_rule, shared with Disaggregation's lanes)."""
    page = new_tab(1440, 900)
    page.goto(f"{app_url}/pipeline")
    wait_for_run(page, HEADING)
    frame = player(page)
    end = frame.evaluate("() => window.playerSignal()")
    assert [line["opacity"] for line in frame.evaluate(CLOCK_LINES)] == [0]
    frame.get_by_test_id("player-step-back").click()
    frame.wait_for_function(f"window.playerSignal() < {end}", timeout=10_000)
    frame.wait_for_function(f"({CLOCK_LINES})()[0].opacity === 1", timeout=10_000)
    [line] = frame.evaluate(CLOCK_LINES)
    assert line["now"] == frame.evaluate("() => window.playerSignal()")
