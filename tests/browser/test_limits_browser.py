"""Bounded runs in Debian's Chromium: the controls shown on more than one page survive moving
between pages through the sidebar (values and link), and a run behind the button can be
cancelled. Skipped when /usr/bin/chromium or Playwright is missing."""

import re
from pathlib import Path

import pytest
from playwright import sync_api

from harness.browser import has_value, wait_for_run
from harness.server import streamlit_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def own_server(tmp_path_factory):
    """A server of their own: these tests time page moves and a run's progress, which the other
    browser tests' heavy pages (still finishing in the shared server's threads) would slow."""
    with streamlit_server(ROOT / "serve.py", tmp_path_factory.mktemp("limits") / "server.log") as url:
        yield url


@pytest.fixture
def page(new_tab, own_server):
    tab = new_tab()
    tab.goto(own_server)               # the first request of a fresh server is its home page
    wait_for_run(tab, "Chunked Prefill Lab")
    return tab


def move_to(page, title: str, heading: str | None = None) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title,
                                                                exact=True).click()
    wait_for_run(page, heading or title)


def settle(page, label: str, value: str, shown) -> None:
    """Type `value` into the field `label`, and wait until the page's rerun shows `shown` and
    ends: the link changes at once, before the server has the value, and Streamlit 1.67 drops
    the sidebar's link keys when a page link is clicked during a run (see test_app_browser)."""
    field = page.get_by_label(label, exact=True)
    field.fill(value)
    field.press("Enter")
    page.wait_for_url(re.compile(rf"[?&]{re.escape(LINK[label])}={value}(&|$)"), timeout=15_000)
    sync_api.expect(page.get_by_text(shown).first).to_be_visible(timeout=30_000)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=30_000)


LINK = {"Requests": "requests", "TPOT target (ms)": "tpot"}


def link_has(page, *pairs: str) -> None:
    """The page's link names every `key=value` of `pairs` (numbers compared as numbers: a value
    handed back may be spelled 2.0): waited for, since the link is rewritten while the page's run
    hands the kept values back, not when it ends."""
    page.wait_for_function("""pairs => pairs.every(pair => {
        const [key, value] = pair.split("=");
        return new URLSearchParams(location.search).getAll(key).some(
            v => v === value || (v !== "" && Number(v) === Number(value)));
    })""", arg=list(pairs), timeout=15_000)


def test_controls_shown_on_several_pages_survive_clicks_through_the_sidebar(page, own_server):
    page.goto(f"{own_server}/traffic?workload=poisson&requests=10&qps=2&budget=1024&gpu=h100-sxm")
    wait_for_run(page, "Traffic")
    page.wait_for_timeout(1000)

    move_to(page, "Memory")                       # where the workload used to be lost
    link_has(page, "workload=poisson", "requests=10")
    sync_api.expect(page.get_by_text("10 Poisson arrivals").first).to_be_visible()
    settle(page, "Requests", "12", "12 Poisson arrivals")

    move_to(page, "Budget trade-off")
    link_has(page, "workload=poisson", "requests=12", "qps=2", "budget=1024", "gpu=h100-sxm")
    has_value(page, "Requests", "12")
    settle(page, "TPOT target (ms)", "40", re.compile(r"(?<![\d.])40 ms"))

    move_to(page, "Roofline")
    link_has(page, "tpot=40")
    has_value(page, "TPOT target (ms)", "40")

    move_to(page, "Capacity")                     # draws the request count, not the workload
    has_value(page, "Requests", "12")
    move_to(page, "Home", "Chunked Prefill Lab")  # draws none of them
    move_to(page, "Traffic")
    link_has(page, "workload=poisson", "requests=12")
    has_value(page, "Requests", "12")
    has_value(page, "Arrival rate (requests/s)", "2")
    assert page.locator('[data-testid="stException"]').count() == 0


# Every progress line the page shows, however briefly (a run of the sweep can take 50 ms).
WATCH_PROGRESS = r"""() => {
  window.__progress = [];
  new MutationObserver(() => {
    for (const m of document.body.innerText.matchAll(/budget [\d,]+ \((\d+) of \d+\)/g))
      window.__progress.push(Number(m[1]));
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def test_a_run_behind_the_button_can_be_cancelled(page, own_server):
    page.goto(f"{own_server}/budget_tradeoff?workload=poisson&requests=1000&qps=1000&lengths=fixed"
              "&olen=4000&gpu=mi300x&model=qwen2.5-7b&bmin=1&bmax=10000000")
    wait_for_run(page, "Budget trade-off")
    run = page.get_by_role("button", name=re.compile(r"^Run \("))
    before = run.inner_text()
    page.evaluate(WATCH_PROGRESS)
    run.click()
    # once the second run has started (so the first has finished), cancel; the first run can take
    # up to its deadline (120 s at the Run tier) on a loaded machine
    page.wait_for_function("() => window.__progress.some(k => k >= 2)", timeout=120_000)
    page.get_by_role("button", name="Cancel").click()
    sync_api.expect(page.get_by_text("Cancelled; the runs that finished are kept.")).to_be_visible(
        timeout=30_000)
    after = page.get_by_role("button", name=re.compile(r"^Run \(")).inner_text()
    assert after != before                        # the estimate is now for the runs left: the
    #                                               first one finished before the cancel
    assert page.locator('[data-testid="stMarkdown"] table').count() == 0
    assert page.locator('[data-testid="stException"]').count() == 0
