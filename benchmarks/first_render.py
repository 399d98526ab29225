"""First render of every page in a fresh browser context, against a one-chart Streamlit page
(benchmarks/reference/one_chart.py) served the same way (`streamlit run` with the lab's [server]
options from .streamlit/config.toml, no source watcher among them) and opened in the same
browser, one visit of it before each visit of a lab page so that both see the same load
(target: median over pages <= 1.3x the reference, no page above 1.6x):

    .venv/bin/python -m benchmarks.first_render [--repeats 3] [--pages roofline fidelity]
    .venv/bin/python -m benchmarks.first_render --against ../before [--repeats 6] [--pages ...]

Each page is opened once first (a teacher's look: the server's caches filled; the charts and
players it shows, once settled, are the ones every later visit waits for), then `--repeats`
times, each in a new Chromium context (no browser cache, a new Streamlit session). A page counts
as rendered when its script has finished, as many charts are drawn and players ready as that
first visit showed, and it stays so (no rerun after it). Streamlit fetches a chart's code only
when the chart arrives, and draws nothing in its place until then: counting the charts present
would call a page rendered before its charts exist. Where the time goes, per page (medians):
  drawn  rendered: every chart drawn and every player ready (Vega-Lite compile and draw, the
         player's bundle), seconds from navigation start
  ref    the reference page's, in the visits interleaved with this page's
  html   the page's HTML and Streamlit's JavaScript loaded (DOMContentLoaded)
  script the first script run reported finished (server run + websocket + React)
  ws kB  bytes the server sent over the websocket (the page's elements and chart data)
The load average is printed beside each row: with other work on the machine the ratio to the
reference, measured in the same minute, is the comparable figure.

On two cores a page's ratio moves by 0.2-0.5x from one run to the next, more than most changes
move it. To measure a change, `--against` another checkout of the lab (a git worktree of the
commit before it): each page is served from both trees at once and opened from each in turn,
alternating which goes first, and the ratio of the medians (this tree / that one) is printed.
Both see the same load, so the ratio leaves the load out, yet it still moves by several percent
from run to run (run it against a copy of this tree to see how far): a change worth keeping shows
on most pages, run after run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from harness.browser import CHARTS, SETTLED
from harness.pages import DEFAULTS
from harness.server import streamlit_server

from .against import Comparison
from .player_bench import chromium_missing, launch_chromium

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "benchmarks" / "reference" / "one_chart.py"
QUIET_MS = 1000   # no script run starting for this long after the draw: the page stays drawn
SETTLE_MS = 3000  # the first visit's wait, after it stayed rendered, before counting its charts

# Installed before any of the page's scripts: when a script run first finished, when the script
# state last changed, and since when the page has been rendered (run finished, every chart drawn,
# every player ready), checked on every animation frame.
WATCH = """
if (window.top === window) {
  window.__scriptChange = 0; window.__ran = false; window.__firstDone = null;
  window.__renderedSince = null;
  new MutationObserver(() => {
    window.__scriptChange = performance.now();
    if (document.querySelector("[data-test-script-state='running']")) window.__ran = true;
  }).observe(document, {subtree: true, attributes: true, attributeFilter: ["data-test-script-state"]});
  const drawn = (box) => box.querySelector("canvas, svg, img");
  window.__expected = {charts: 0, frames: 0};   // set per visit (open_fresh: `expected`)
  // the charts drawn and the players ready (a chart's box holds its canvas once drawn)
  window.__shown = () => ({
    charts: [...document.querySelectorAll("CHARTS")].filter(drawn).length,
    frames: [...document.querySelectorAll('[data-testid="stIFrame"]')].filter(
      frame => frame.contentWindow && frame.contentWindow.playerReady === true).length});
  const rendered = () => {
    // the app shows "not running" before its first run too
    if (!window.__ran || !document.querySelector(FINISHED)) return false;
    if (window.__firstDone === null) window.__firstDone = performance.now();
    const shown = window.__shown();
    return shown.charts >= window.__expected.charts && shown.frames >= window.__expected.frames
      && [...document.querySelectorAll('[data-testid="stFullScreenFrame"]')].every(drawn);
  };
  const check = () => {
    if (!rendered()) window.__renderedSince = null;
    else if (window.__renderedSince === null) window.__renderedSince = performance.now();
    requestAnimationFrame(check);
  };
  requestAnimationFrame(check);
}
""".replace("FINISHED", repr(SETTLED)).replace("CHARTS", CHARTS)
STAYED = f"""() => window.__renderedSince !== null && window.__scriptChange <= window.__renderedSince
                 && performance.now() - window.__renderedSince > {QUIET_MS}"""


def lab_server_flags() -> list[str]:
    """The lab's [server] options as `streamlit run` flags, to serve the reference as the lab is."""
    with open(ROOT / ".streamlit" / "config.toml", "rb") as config:
        server = tomllib.load(config).get("server", {})
    return [f"--server.{key}={str(value).lower() if isinstance(value, bool) else value}"
            for key, value in server.items()]


@dataclass
class Render:
    seconds: float     # from navigation start to rendered (and staying so)
    html: float        # DOMContentLoaded
    script: float      # first script run finished
    ws_bytes: int      # bytes received over the websocket
    shown: dict        # charts drawn and players ready: {"charts": n, "frames": m}


def open_fresh(browser, url: str, expected: dict | None = None) -> Render:
    """One visit in a new context, waiting for the `expected` charts and players (None: the
    first visit, which waits SETTLE_MS more and counts what it shows)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(WATCH)
    if expected is not None:
        context.add_init_script(f"window.__expected = {json.dumps(expected)};")
    received = [0]

    def on_socket(ws):
        ws.on("framereceived", lambda payload: received.__setitem__(0, received[0] + len(payload)))

    try:
        page = context.new_page()
        page.on("websocket", on_socket)
        page.goto(url)
        page.wait_for_function(STAYED, timeout=60_000, polling=100)
        if expected is None:
            page.wait_for_timeout(SETTLE_MS)
        timing = page.evaluate("""() => ({shown: window.__shown(),
            html: performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd,
            script: window.__firstDone, drawn: window.__renderedSince,
            })""")
    finally:
        context.close()
    return Render(timing["drawn"] / 1000, timing["html"] / 1000, timing["script"] / 1000,
                  received[0], timing["shown"])


def compare(browser, here: str, there: str, pages, repeats: int) -> None:
    """Each page from this tree (`here`) and another (`there`), visits alternated (which goes
    first alternates too); medians of the time until rendered and their ratio."""
    print(f"{'page':<17} {'this':>6} {'other':>6} {'ratio':>6}  load   (seconds until rendered, "
          f"medians of {repeats} visits each)")
    comparison = Comparison(label_width=17, decimals=2)
    for path in pages:
        urls = (f"{here}/{path}", f"{there}/{path}")
        expected = [open_fresh(browser, url).shown for url in urls]    # fills the caches
        comparison.measure(f"/{path}", repeats, lambda side, urls=urls, expected=expected:
                           open_fresh(browser, urls[side], expected[side]).seconds)
    comparison.summary("pages")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.first_render")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pages", nargs="*", default=list(DEFAULTS),
                        help="paths of the pages to open ('' is the home page); default: all")
    parser.add_argument("--against", type=Path, metavar="CHECKOUT",
                        help="another checkout of the lab to compare this one with, page by page "
                             "(instead of the one-chart reference)")
    args = parser.parse_args(argv)
    if args.against and not (args.against / "serve.py").is_file():
        parser.error(f"--against {args.against}: no serve.py there; give the folder of another "
                     "checkout of the lab (e.g. git worktree add ../before HEAD~1)")
    if chromium_missing():
        return 1
    from playwright.sync_api import sync_playwright

    if args.against:
        with tempfile.TemporaryDirectory() as folder, \
                streamlit_server(ROOT / "serve.py", Path(folder) / "this.log") as here, \
                streamlit_server(args.against.resolve() / "serve.py",
                                 Path(folder) / "other.log") as there, \
                sync_playwright() as p:
            browser = launch_chromium(p)
            compare(browser, here, there, args.pages, args.repeats)
            browser.close()
        return 0

    ratios = {}
    with tempfile.TemporaryDirectory() as folder, \
            streamlit_server(ROOT / "serve.py", Path(folder) / "lab.log") as lab, \
            streamlit_server(REFERENCE, Path(folder) / "reference.log",
                             *lab_server_flags()) as reference, \
            sync_playwright() as p:
        browser = launch_chromium(p)
        shows = open_fresh(browser, reference).shown
        print(f"{'page':<17} {'ratio':>6} {'drawn':>6} {'ref':>6} {'html':>5} {'script':>6} "
              f"{'ws kB':>6} {'charts':>6}  load   (seconds from navigation start, medians)")
        for path in args.pages:
            expected = open_fresh(browser, f"{lab}/{path}").shown      # fills the caches
            pairs = [(open_fresh(browser, reference, shows),
                      open_fresh(browser, f"{lab}/{path}", expected))
                     for _ in range(args.repeats)]
            ref = statistics.median(r.seconds for r, _ in pairs)
            runs = [r for _, r in pairs]
            median = statistics.median(r.seconds for r in runs)
            ratios[path] = median / ref

            def mid(name, runs=runs):
                return statistics.median(getattr(r, name) for r in runs)

            print(f"/{path:<16} {ratios[path]:5.2f}x {median:6.2f} {ref:6.2f} {mid('html'):5.2f} "
                  f"{mid('script'):6.2f} {mid('ws_bytes') / 1000:6.0f} "
                  f"{expected['charts'] + expected['frames']:>6}  {os.getloadavg()[0]:.1f}",
                  flush=True)
        browser.close()
    print(f"median over pages: {statistics.median(ratios.values()):.2f}x the one-chart page "
          f"(target <= 1.3x), worst {max(ratios.values()):.2f}x (target <= 1.6x); load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
