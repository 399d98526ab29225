"""The Roofline page's GEMM tiles in Chromium: a link with the calibrated mode set opens the page in
that mode and keeps it in its address; the tile chart is drawn, and hovering over it shows a
token count's rows in whole tiles, their formula, its empty rows and its time, stepping where a
tile ends."""

import re

from playwright import sync_api

from harness.browser import has_value, wait_for_run
from ui.shell.chart_view import BOX_CLASS

LINK = "/roofline?gpu=h100-sxm&mode=calibrated&budget=2000&tpot=64.7"
ROWS = re.compile(r"rows computed \(tiles of 64\)\s*([\d,]+)")
TOKENS = re.compile(r"batch tokens\s*([\d,]+)")


def test_a_calibrated_link_draws_the_tile_steps_and_hover_reads_rows_in_whole_tiles(new_tab,
                                                                                      app_url):
    page = new_tab(1440, 900)
    page.goto(f"{app_url}{LINK}")
    wait_for_run(page, "Roofline")
    has_value(page, "Token budget per iteration", "2000")
    assert "mode=calibrated" in page.url and "budget=2000" in page.url   # the link round-trips
    charts = page.locator(f".{BOX_CLASS}")
    sync_api.expect(charts).to_have_count(3)
    tiles = charts.nth(2)
    sync_api.expect(tiles.locator("canvas")).to_have_count(1)
    tiles.scroll_into_view_if_needed()
    box = tiles.bounding_box()
    tooltip = page.locator("#vg-tooltip-element.visible")
    read = {}
    for dx in range(80, int(box["width"]) - 40, 9):   # across the plot, left to right
        page.mouse.move(box["x"] + dx, box["y"] + box["height"] / 2)
        if not tooltip.count():
            continue
        text = tooltip.inner_text()
        tokens, rows = TOKENS.search(text), ROWS.search(text)
        if tokens and rows:
            read[int(tokens.group(1).replace(",", ""))] = int(rows.group(1).replace(",", ""))
            assert "empty rows" in text and "time (ms)" in text
            # the formula, which Vega writes from the token's row
            assert f"rows = ⌈{tokens.group(1)} / 64⌉ × 64 = {rows.group(1)};" in text
    assert len(read) >= 10, f"hovering read {len(read)} token counts"
    assert all(rows % 64 == 0 and 0 <= rows - tokens < 64 for tokens, rows in read.items())
    assert len(set(read.values())) >= 3, "the rows never stepped to a new tile"
    page.reload()
    wait_for_run(page, "Roofline")
    sync_api.expect(page.locator(f".{BOX_CLASS}")).to_have_count(3)
