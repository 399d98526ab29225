"""The Disaggregation page in Chromium: it renders at 1280x720 without a horizontal scroll bar,
its controls round-trip through the link, its lanes download, and a hand-off's hover shows the
transfer's arithmetic."""

from pathlib import Path

from playwright import sync_api

from harness.browser import download, has_value, wait_for_run

HEADING = "Disaggregation"
# five requests, far apart, over 100 GbE: each hand-off a slanted line of 85.91 ms
SPARSE = "requests=5&qps=0.5&kvlink=100gbe"


def test_the_page_renders_at_1280x720_without_a_horizontal_scroll(new_tab, app_url):
    page = new_tab(1280, 720)
    page.goto(f"{app_url}/disaggregation")
    wait_for_run(page, HEADING)
    player(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    overflow = page.evaluate("() => { const m = document.querySelector('[data-testid=\"stMain\"]');"
                             " return m.scrollWidth - m.clientWidth; }")
    assert overflow <= 0
    assert page.get_by_text("colocation wins at this rate", exact=False).count() == 1


def test_a_link_round_trips_the_split_the_link_and_the_rate(new_tab, app_url):
    page = new_tab(1280, 720)
    page.goto(f"{app_url}/disaggregation?prefillgpu=2&kvlink=100gbe&qps=1&requests=40")
    wait_for_run(page, HEADING)
    page.locator(".st-key-decodegpu").get_by_role("button", name="Increment").click()
    page.wait_for_url("**decodegpu=2**", timeout=15_000)
    assert "prefillgpu=2" in page.url and "kvlink=100gbe" in page.url
    fresh = page.context.new_page()
    fresh.goto(page.url)
    wait_for_run(fresh, HEADING)
    for label, value in (("Prefill GPUs", "2"), ("Decode GPUs", "2"),
                         ("Arrival rate (requests/s)", "1")):
        has_value(fresh, label, value)
    assert fresh.get_by_text("2 prefill GPUs + 2 decode GPUs", exact=False).count() == 1
    assert fresh.get_by_text("+ 10 µs latency = 85.91 ms", exact=False).count() == 1


def test_the_lanes_download_as_png_and_csv(new_tab, app_url):
    page = new_tab(1280, 900)
    page.goto(f"{app_url}/disaggregation?{SPARSE}")
    wait_for_run(page, HEADING)
    png = download(page, "disaggregation-lanes", "png")
    assert Path(png.path()).read_bytes().startswith(b"\x89PNG")
    csv = download(page, "disaggregation-lanes", "csv")
    assert csv.suggested_filename.endswith(".zip") or csv.suggested_filename.endswith(".csv")


def player(page):
    """The lanes' player, drawn: its frame."""
    frame = page.wait_for_selector(".st-key-main-figure iframe", timeout=30_000).content_frame()
    frame.wait_for_function("window.playerReady === true", timeout=30_000)
    return frame


# where the first hand-off's line is in the player's frame: its midpoint in the Vega view's
# scenegraph (player.js keeps the view as window.playerView), plus the plot's origin and canvas
HANDOFF_AT = """() => {
  const view = window.playerView, found = [];
  const walk = (node) => {
    if (node.marktype === 'rule') for (const it of node.items || [])
      if (it.datum && it.datum.transfer_ms !== undefined) found.push(it);
    for (const it of node.items || []) for (const child of it.items || []) walk(child);
  };
  walk(view.scenegraph().root);
  const it = found[0], [ox, oy] = view.origin();
  const c = view.container().querySelector('canvas').getBoundingClientRect();
  return {x: c.left + ox + (it.x + it.x2) / 2, y: c.top + oy + (it.y + it.y2) / 2, count: found.length};
}"""


def test_a_hand_off_shows_its_arithmetic_on_hover(new_tab, app_url):
    """The player opens at the run's end, every hand-off drawn; one hovered shows its sum."""
    page = new_tab(1440, 900)
    page.goto(f"{app_url}/disaggregation?{SPARSE}")
    wait_for_run(page, HEADING)
    frame = player(page)
    page.locator(".st-key-main-figure iframe").scroll_into_view_if_needed()
    at = frame.evaluate(HANDOFF_AT)
    assert at["count"] == 5                                       # every request's hand-off
    box = page.locator(".st-key-main-figure iframe").bounding_box()
    page.mouse.move(box["x"] + at["x"], box["y"] + at["y"])
    tooltip = frame.locator("#vg-tooltip-element.visible")
    sync_api.expect(tooltip).to_contain_text("transfer = bytes / bandwidth + latency")
    sync_api.expect(tooltip).to_contain_text("1.07 GB / 12.5 GB/s + 10 µs = 85.91 ms")
