"""Accessibility in Chromium: axe-core (axe-playwright-python) finds nothing critical or serious
on any page, in the page or in the player's frame, light and dark; every chart has its numbers as
a table (its text alternative)."""

import pytest
from playwright import sync_api

from harness.visit import NUMBERS, settle
from tests.browser.pages import VISITS, ids


@pytest.mark.parametrize("path, scheme", VISITS, ids=ids(VISITS))
def test_axe_finds_nothing_critical_or_serious(visited, path, scheme):
    assert visited(path, scheme).blocking() == []


@pytest.mark.parametrize("path, scheme", VISITS, ids=ids(VISITS))
def test_every_chart_has_its_numbers_as_tables(visited, path, scheme):
    page = visited(path, scheme)
    assert page.tables == page.charts, f"{page.charts} charts, {page.tables} table switches"


def test_a_charts_table_holds_its_numbers(browser, app_url):
    """The roofline's switch shows the chart's two tables: the roof's points, and the scenario's
    four iterations with the numbers the chart's tooltips give (decode-only: 64 tokens, 64
    FLOP/B on the illustrative GPU)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        page.goto(f"{app_url}/roofline")
        settle(page)
        page.locator(".st-key-numbers_roofline").get_by_text(NUMBERS).click()
        tables = page.locator("[data-testid='stDataFrame']")
        sync_api.expect(tables).to_have_count(2, timeout=15_000)
        sync_api.expect(page.get_by_text("`points`")).to_have_count(0)      # code, not backticks
        points = tables.nth(1).locator("table")
        sync_api.expect(points.locator("tbody tr")).to_have_count(4, timeout=15_000)
        cells = points.locator("tbody tr").first.locator("td").all_inner_texts()
        assert "decode step (64 streams)" in cells and cells.count("64") >= 2   # tokens, FLOP/B
    finally:
        context.close()
