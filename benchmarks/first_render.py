"""First render of every page in a fresh browser context (issue 10: < 2 s median on an idle
machine), against `streamlit run serve.py` as `make run` starts it:

    .venv/bin/python -m benchmarks.first_render [--repeats 3]

Each page is opened once first (a teacher's look: the server's caches filled), then `--repeats`
times, each in a new Chromium context (no browser cache, a new Streamlit session). Time: from
`goto` to the script finished with every chart drawn and the player ready
(harness/visit.py). Prints each page's median and the median over pages.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from harness.pages import DEFAULTS
from harness.server import streamlit_server
from harness.visit import visit

from .player_bench import chromium_missing, launch_chromium

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.first_render")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if chromium_missing():
        return 1
    from playwright.sync_api import sync_playwright

    medians = {}
    with tempfile.TemporaryDirectory() as folder, \
            streamlit_server(ROOT / "serve.py", Path(folder) / "server.log") as url, \
            sync_playwright() as p:
        browser = launch_chromium(p)
        print(f"{'page':<18} {'median':>8} {'min':>8} {'max':>8}   (fresh context each time)")
        for path in DEFAULTS:
            visit(browser, url, path, audit=False)                   # fills the caches
            times = [visit(browser, url, path, audit=False).seconds for _ in range(args.repeats)]
            medians[path] = statistics.median(times)
            print(f"/{path:<17} {medians[path]:7.2f}s {min(times):7.2f}s {max(times):7.2f}s",
                  flush=True)
        browser.close()
    print(f"median over pages: {statistics.median(medians.values()):.2f} s (target < 2 s on an "
          f"idle machine; load average here {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
