"""The charts in the page (ui/shell/chart_view.py, ui/shell/front/chart.js): drawn by Vega alone on a canvas,
their tooltips shown on hover, a rerun that sends the same chart leaving it as drawn, and a
changed control drawing it anew."""

from playwright import sync_api

from harness.browser import wait_for_run
from harness.visit import NUMBERS, settle
from ui.shell.chart_view import BOX_CLASS

CHART = f".{BOX_CLASS}"
# the first chart's canvas, marked so that a later look can tell whether it is the same one
MARK_CANVAS = f"""() => {{ const c = document.querySelector('{CHART} canvas');
  if (c) c.dataset.seen = 'yes'; return !!c; }}"""
SAME_CANVAS = f"() => document.querySelector('{CHART} canvas').dataset.seen === 'yes'"


def test_the_roofline_draws_with_vega_alone_and_shows_its_tooltips(new_tab, app_url):
    page = new_tab(1440, 900)
    page.goto(f"{app_url}/roofline")
    wait_for_run(page, "Roofline")
    charts = page.locator(CHART)
    sync_api.expect(charts).to_have_count(2)
    for index in range(2):
        sync_api.expect(charts.nth(index).locator("canvas")).to_have_count(1)
    # Vega alone: no Vega-Lite, no Streamlit chart element
    assert page.evaluate("() => !!window.vega && !window.vegaLite")
    assert page.locator('[data-testid="stVegaLiteChart"]').count() == 0
    box = charts.first
    box.scroll_into_view_if_needed()
    area = box.bounding_box()
    tooltip = page.locator("#vg-tooltip-element.visible")
    for dx in range(60, 220, 6):   # across the roof's slope, where the decode step sits
        for dy in range(100, 220, 6):
            page.mouse.move(area["x"] + dx, area["y"] + dy)
            if tooltip.count():
                break
        if tooltip.count():
            break
    sync_api.expect(tooltip).to_contain_text("decode step")
    assert tooltip.evaluate("t => getComputedStyle(t).fontFamily").startswith('"Source Sans"')


def test_a_rerun_keeps_a_chart_as_drawn_and_a_new_value_redraws_it(new_tab, app_url):
    page = new_tab(1440, 900)
    page.goto(f"{app_url}/roofline")
    wait_for_run(page, "Roofline")
    page.wait_for_function(MARK_CANVAS)
    settle(page)
    page.locator(".st-key-numbers_roofline").get_by_text(NUMBERS).click()
    page.locator('[data-testid="stDataFrame"]').first.wait_for()   # the rerun drew its tables
    settle(page)
    assert page.evaluate(SAME_CANVAS), "a rerun with the same chart drew it again"
    budget = page.get_by_label("Token budget per iteration", exact=True)
    budget.fill("1024")
    budget.press("Enter")
    page.wait_for_function(f"() => !document.querySelector('{CHART} canvas')?.dataset.seen",
                           timeout=15_000)
    sync_api.expect(page.locator(CHART).first.locator("canvas")).to_have_count(1)
