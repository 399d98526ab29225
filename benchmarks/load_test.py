"""One server for a room: a bounded load test of `streamlit run serve.py` (what `make run` starts),
on loopback only.

    make loadtest          # or: .venv/bin/python -m benchmarks.load_test [--sessions 30] ...

The teacher opens the shared link first (one session, not timed: it fills the server's caches).
Then `--sessions` attendees open the same link within `--spread` seconds, and `--changers` of
them change a control (the token budget, each to a value of their own). Each attendee is a small
websocket client that speaks Streamlit's own protocol, as the browser does: it connects to
/_stcore/stream, sends a `rerun_script` BackMsg with the page and the link's query string, and
reads ForwardMsgs until `script_finished`; a change is a `rerun_script` with the budget widget's
new value (its id read from the page's own number_input). One real Chromium page among them
confirms that the page renders. Prints p50 / p95 / max from connect to the script's finished
message for the opens and for the changes, and the server's peak resident memory. Every figure is
printed, none asserted (target: p95 < 3 s for 30 sessions on one link).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from harness.protocol import LINK, TIMEOUT_S, attendee, crowd
from harness.server import streamlit_server

from .player_bench import CHROMIUM, launch_chromium

ROOT = Path(__file__).resolve().parents[1]


# --- the server -----------------------------------------------------------------------------
def server_pid(port: int) -> int:
    """The pid of the `streamlit run` serving `port` (harness.server starts it)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if f"--server.port={port}".encode() in args:
            return int(cmdline.parent.name)
    raise SystemExit(f"no server process for port {port}")


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory (VmHWM: the kernel's own high-water mark)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# --- one real browser among them ------------------------------------------------------------
def browser_check(url: str, link: str, outcome: dict) -> None:
    """Chromium opens the same link while the attendees do: the page and its player render."""
    if not Path(CHROMIUM).exists():
        outcome["browser"] = f"skipped: {CHROMIUM} is missing"
        return
    from playwright.sync_api import sync_playwright

    started = time.perf_counter()
    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/{link}")
            page.get_by_role("heading", name="Side by side").first.wait_for(timeout=TIMEOUT_S * 1000)
            frame = page.wait_for_selector("iframe", timeout=TIMEOUT_S * 1000).content_frame()
            frame.wait_for_function("window.playerReady === true", timeout=TIMEOUT_S * 1000)
            cards = page.locator('[data-testid="stMetric"]').count()
            outcome["browser"] = (f"rendered in {time.perf_counter() - started:.1f} s "
                                  f"(heading, {cards} metric cards, the player ready)")
        except Exception as e:   # reported, not raised: the figures above still stand
            outcome["browser"] = f"did not render: {e}".splitlines()[0]
        finally:
            browser.close()


# --- the run ----------------------------------------------------------------------------------
def summary(name: str, times: list[float]) -> str:
    if not times:
        return f"{name:<34} none"
    ordered = sorted(times)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    return (f"{name:<34} n={len(times):<3} p50 {statistics.median(ordered):6.2f} s   "
            f"p95 {p95:6.2f} s   max {ordered[-1]:6.2f} s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.load_test",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--changers", type=int, default=10)
    parser.add_argument("--spread", type=float, default=3.0, help="seconds over which they open")
    parser.add_argument("--link", default=LINK, help="page?query, as a shared link's tail")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-browser", action="store_true", help="skip the Chromium page")
    parser.add_argument("--cold", action="store_true",
                        help="no teacher's open first: the crowd meets empty caches")
    args = parser.parse_args(argv)
    if not 1 <= args.sessions <= 200 or not 0 <= args.changers <= args.sessions:
        parser.error("--sessions must be in 1..200 and --changers in 0..sessions")
    with tempfile.TemporaryDirectory() as folder, \
            streamlit_server(ROOT / "serve.py", Path(folder) / "server.log") as url:
        port = int(url.rsplit(":", 1)[1])
        pid = server_pid(port)
        print(f"server: {url} (pid {pid}), link /{args.link}")
        if not args.cold:
            warm = asyncio.run(attendee(port, args.link, 0, None))
            print(f"the teacher's first open (fills the caches): {warm['open_s']:.2f} s")
        outcome: dict = {}
        chromium = threading.Thread(target=browser_check, args=(url, args.link, outcome))
        if not args.no_browser:
            chromium.start()
        started = time.perf_counter()
        results = asyncio.run(crowd(port, args.link, args.sessions, args.changers, args.spread,
                                    args.seed))
        wall = time.perf_counter() - started
        if not args.no_browser:
            chromium.join()
        print(f"{args.sessions} sessions opening within {args.spread:g} s, {args.changers} "
              f"changing the budget; all done in {wall:.1f} s ({os.cpu_count()} CPU cores here, "
              f"load average {os.getloadavg()[0]:.1f})")
        print(summary("open: connect -> script finished", [r["open_s"] for r in results]))
        print(summary("change: rerun -> script finished",
                      [r["change_s"] for r in results if r["change_s"] is not None]))
        print(f"server peak resident memory: {peak_rss_mib(pid):,.0f} MiB")
        print(f"Chromium among them: {outcome.get('browser', 'not run (--no-browser)')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
