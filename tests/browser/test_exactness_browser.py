"""The Chunking is exact page in Chromium: it renders its picture, its controls round-trip through
the link, and its picture downloads."""

import re
from pathlib import Path

from playwright import sync_api

from harness.browser import download, has_value, wait_for_run

HEADING = "Chunking is exact"


def test_the_page_draws_its_picture(new_tab, app_url):
    page = new_tab(1280, 720)
    page.goto(f"{app_url}/exactness")
    wait_for_run(page, HEADING)
    page.locator(".st-key-chart_exactness .lab-chart canvas").wait_for(timeout=30_000)
    assert page.locator('[data-testid="stException"]').count() == 0
    # one verdict or the other, waited for: on a loaded machine the words can land after the canvas
    verdict = page.get_by_text(re.compile(r"^(The same up to rounding|Bit-identical)\.$"))
    sync_api.expect(verdict).to_have_count(1, timeout=30_000)


def test_a_link_round_trips_the_prompt_chunk_and_seed(new_tab, app_url):
    """The link's values are shown; a step of the seed's + goes into the address bar, which,
    opened in a fresh tab, shows the same three values and the same cut."""
    page = new_tab(1280, 720)
    page.goto(f"{app_url}/exactness?exprompt=300&exchunk=7&exseed=5")
    wait_for_run(page, HEADING)
    page.locator(".st-key-exseed").get_by_role("button", name="Increment").click()
    page.wait_for_url("**exseed=6**", timeout=15_000)
    assert "exprompt=300" in page.url and "exchunk=7" in page.url
    fresh = page.context.new_page()
    fresh.goto(page.url)
    wait_for_run(fresh, HEADING)
    for label, value in (("Prompt (tokens)", "300"), ("Chunk (tokens)", "7"),
                         ("Random seed", "6")):
        has_value(fresh, label, value)
    assert fresh.get_by_text("in 42 chunks of 7 tokens and a last one of 6 tokens",
                             exact=False).count() == 1


def test_the_picture_downloads_as_png_and_svg(new_tab, app_url):
    page = new_tab(1280, 900)
    page.goto(f"{app_url}/exactness?exprompt=300&exchunk=100")
    wait_for_run(page, HEADING)
    png = download(page, "exactness", "png")
    assert png.suggested_filename == "exactness_prompt-300_chunk-100_seed-0_light.png"
    assert Path(png.path()).read_bytes().startswith(b"\x89PNG")
    svg = Path(download(page, "exactness", "svg").path()).read_text()
    assert svg.startswith("<svg") and "in chunks: 3 passes" in svg
    assert "a 300-token prompt in one pass and in chunks of 100 tokens" in svg   # its caption
