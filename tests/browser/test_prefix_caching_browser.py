"""The Prefix caching page in Chromium: it renders at 1280x720 without a horizontal scroll bar,
its controls round-trip through the link into a fresh browser context, and its figure downloads."""

from pathlib import Path

from harness.browser import download, has_value, horizontal_overflow, wait_for_run

HEADING = "Prefix caching"


def test_the_page_renders_at_1280x720_without_a_horizontal_scroll(new_tab, app_url):
    page = new_tab(1280, 720)
    page.goto(f"{app_url}/prefix_caching")
    wait_for_run(page, HEADING)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert horizontal_overflow(page) <= 0
    assert page.get_by_text("407,552 saved", exact=False).count() == 1


def test_a_link_round_trips_the_prefix_its_share_and_the_order(new_tab, app_url):
    page = new_tab(1280, 720)
    page.goto(f"{app_url}/prefix_caching?pshare=0.5&order=lpm&requests=60")
    wait_for_run(page, HEADING)
    prefix = page.locator(".st-key-prefix input")
    prefix.fill("512")
    prefix.press("Enter")
    page.wait_for_url("**prefix=512**", timeout=15_000)
    assert "pshare=0.5" in page.url and "order=lpm" in page.url
    fresh = new_tab(1280, 720)                       # a new browser context: nothing carried
    fresh.goto(page.url)
    wait_for_run(fresh, HEADING)
    has_value(fresh, "Shared prefix (tokens)", "512")
    assert fresh.get_by_text("each with chance 0.5 begins with the same 512-token system prompt",
                             exact=False).count() == 1


def test_the_figure_downloads_as_png_and_csv(new_tab, app_url):
    page = new_tab(1280, 900)
    page.goto(f"{app_url}/prefix_caching?requests=60")
    wait_for_run(page, HEADING)
    png = download(page, "prefix-caching", "png")
    assert Path(png.path()).read_bytes().startswith(b"\x89PNG")
    csv = download(page, "prefix-caching", "csv")
    assert csv.suggested_filename.endswith(".zip")   # two tables: the requests and the KV pool
