"""One visit of an app page in a fresh browser context, recording what the offline, console and
accessibility tests check: every request, every console message, axe-core's findings in the page
and in the player's frame, and the time to the first complete render."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from axe_playwright_python.sync_playwright import Axe

from .browser import CHARTS, SETTLED

# what a test fails on: axe's two worst levels (moderate and minor are reported, not failed)
BLOCKING = ("critical", "serious")
NUMBERS = "Show this chart's numbers as tables"   # ui.shell.widgets.numbers_table


@dataclass
class Visit:
    path: str
    scheme: str
    seconds: float = 0.0                       # goto to the page drawn: script done, charts shown
    outside: list[str] = field(default_factory=list)         # requests not to the app's address
    errors: list[str] = field(default_factory=list)          # console errors and page errors
    vega_warnings: list[str] = field(default_factory=list)   # Vega's logger: "WARN ..."
    warnings: list[str] = field(default_factory=list)        # every other console warning
    axe: list[dict] = field(default_factory=list)            # violations, page and frames
    exceptions: int = 0                                      # Streamlit exception boxes
    page_not_found: int = 0
    prompt_value: str = ""                                   # the sidebar's prompt field
    charts: int = 0                                          # charts and players drawn
    tables: int = 0                                          # "numbers as tables" switches

    def blocking(self) -> list[str]:
        return [f"{v['impact']} {v['id']}: {v['help']} ({v['frame']}: {v['targets'][:3]})"
                for v in self.axe if v["impact"] in BLOCKING]


def visit(browser, app_url: str, path: str, scheme: str = "light", audit: bool = True) -> Visit:
    """Open `path` in a fresh context; `audit=False` skips axe (benchmarks.first_render)."""
    record = Visit(path, scheme)
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, color_scheme=scheme)
    try:
        page = context.new_page()
        page.on("request", lambda r: None if r.url.startswith((app_url, "data:", "blob:", "about:"))
                else record.outside.append(r.url))
        page.on("pageerror", lambda e: record.errors.append(str(e)))
        page.on("console", lambda m: _console(record, m))
        start = time.perf_counter()
        page.goto(f"{app_url}/{path}")
        page.wait_for_selector(SETTLED, timeout=60_000)
        _wait_for_charts(page)
        record.seconds = time.perf_counter() - start
        settle(page)
        record.exceptions = page.locator('[data-testid="stException"]').count()
        record.page_not_found = page.get_by_text("Page not found").count()
        record.charts = (page.locator(CHARTS).count()
                         + page.locator('[data-testid="stIFrame"]').count())
        record.tables = page.get_by_role("switch", name=NUMBERS).count()
        prompt = page.get_by_label("New prompt (tokens)", exact=True)
        record.prompt_value = prompt.input_value() if prompt.count() else ""
        axe = Axe()
        for frame in page.frames if audit else ():
            for violation in axe.run(frame).response["violations"]:
                record.axe.append({"impact": violation["impact"], "id": violation["id"],
                                   "help": violation["help"], "frame": frame.url[:40],
                                   "targets": [n["target"] for n in violation["nodes"]]})
    finally:
        context.close()
    return record


# Remembers when the script's state last changed (a run starting or ending), idempotently.
WATCH_RUNS = """() => {
  if (window.__scriptChange === undefined) {
    window.__scriptChange = performance.now();
    new MutationObserver(() => { window.__scriptChange = performance.now(); }).observe(
      document.documentElement,
      {subtree: true, attributes: true, attributeFilter: ["data-test-script-state"]});
  }
}"""


def settle(page, quiet_ms: int = 1000, timeout_s: float = 30) -> None:
    """Wait until the script has been idle for `quiet_ms` with nothing stale on screen: a first
    run can be followed by a rerun (a link's values), during which Streamlit fades the old
    elements, which axe would rightly find too faint, and the page is half old, half new."""
    page.wait_for_selector(SETTLED, timeout=60_000)
    page.evaluate(WATCH_RUNS)
    page.wait_for_function(
        f"""() => document.querySelector("{SETTLED}") && !document.querySelector("[data-stale='true']")
                  && performance.now() - window.__scriptChange > {quiet_ms}""",
        timeout=timeout_s * 1000)


def _console(record: Visit, message) -> None:
    if message.type == "error":
        record.errors.append(message.text)
    elif message.type == "warning":
        (record.vega_warnings if message.text.startswith("WARN") else record.warnings).append(
            message.text)


def _wait_for_charts(page) -> None:
    """Every chart drawn (a canvas in each) and every player ready."""
    page.wait_for_function(
        f"""() => [...document.querySelectorAll("{CHARTS}")]
                 .every(chart => chart.querySelector('canvas'))""", timeout=60_000)
    for frame in page.frames[1:]:
        frame.wait_for_function("window.playerReady === true", timeout=60_000)
