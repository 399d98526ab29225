"""Playback frame rate of the in-browser player in headless Chromium (target: >= 30 fps).

Frame rate is not a duration, so this is its own script rather than a `cases()` suite:

    python -m benchmarks.player_bench [--seconds 3]

It builds the Side by side page's own chart (charts.views.timeline on the textbook scenario's two
runs), plays it in Debian's Chromium for a few seconds and prints how many
animation frames actually updated the Vega view per second (target >= 30), plus the page sizes of
both script designs (inline bundle vs static file) and how long each takes to draw the chart.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import sim
from charts.player import player_html, static_bundle_page, vega_bundle, vega_bundle_name
from charts.theme import Look
from charts.views import timeline
from harness.browser import CHROMIUM, CHROMIUM_ARGS


def side_by_side_chart() -> tuple[dict, float, list[float]]:
    """The Side by side page's timeline at the defaults (vllm-v0 above sarathi at budget 576, the
    whole run on the time axis): its spec, t_max and iteration-end boundaries."""
    workload = sim.textbook_scenario()
    lanes = timeline(sim.run(workload, "vllm-v0", mode="simple"),
                     sim.run(workload, "sarathi", mode="simple"), "run")
    return lanes.figure(Look(), 900).spec(), lanes.t_max, lanes.boundaries


def chromium_missing() -> bool:
    """Say so, when Debian's Chromium (which the browser benchmarks drive) is not installed."""
    if Path(CHROMIUM).exists():
        return False
    print(f"{CHROMIUM} not found: install Debian's chromium to run this benchmark")
    return True


def launch_chromium(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)


def _measure(browser, url: str, seconds: float, start_t: float) -> dict:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_function("window.playerReady === true", timeout=30_000)
    ready_s = time.perf_counter() - start
    page.get_by_test_id("player-scrub").fill(repr(start_t))
    started_ms = page.evaluate(
        "() => { Object.assign(window.playerStats, {updates: 0, frames: 0, updateMs: 0});"
        " return performance.now(); }")
    page.get_by_test_id("player-play").click()
    page.wait_for_timeout(seconds * 1000)
    stats = page.evaluate("() => ({...window.playerStats, t: window.playerState.t,"
                          " playing: window.playerState.playing, now: performance.now()})")
    page.close()
    return {**stats, "played_s": (stats["now"] - started_ms) / 1000, "ready_s": ready_s}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.player_bench")
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args(argv)
    if chromium_missing():
        return 1
    from playwright.sync_api import sync_playwright

    spec, t_max, boundaries = side_by_side_chart()
    # Play from the middle of the run (thousands of marks visible) at t_max / 10 per wall second,
    # so the clock does not reach the end within the measurement.
    ms_per_second = t_max * 1000 / 10
    inline = player_html(spec, t_max=t_max, boundaries=boundaries, ms_per_second=ms_per_second)
    with tempfile.TemporaryDirectory() as folder:
        bundle = Path(folder, vega_bundle_name())
        bundle.write_text(vega_bundle(), encoding="utf-8")
        external = static_bundle_page(inline, bundle.name)
        Path(folder, "inline.html").write_text(inline, encoding="utf-8")
        Path(folder, "static.html").write_text(external, encoding="utf-8")
        rows = sum(len(values) for values in spec["datasets"].values())
        print(f"chart: 2 lanes, {len(boundaries)} iteration boundaries, {rows:,} data rows")
        print(f"page size, bundle inlined:   {len(inline.encode()) / 1e6:6.2f} MB")
        print(f"page size, static bundle:    {len(external.encode()) / 1e6:6.2f} MB"
              f" (+ {len(vega_bundle().encode()) / 1e6:.2f} MB bundle, cached by the browser)")
        with sync_playwright() as p:
            browser = launch_chromium(p)
            try:
                for name in ("inline", "static"):
                    r = _measure(browser, Path(folder, f"{name}.html").as_uri(), args.seconds,
                                 start_t=t_max / 2)
                    fps = r["updates"] / r["played_s"]
                    verdict = "ok" if fps >= 30 else "BELOW 30 FPS TARGET"
                    print(f"{name:>6}: chart drawn {r['ready_s'] * 1000:4.0f} ms after load, "
                          f"{fps:5.1f} view updates/s ({r['frames']} animation frames, "
                          f"{r['updateMs'] / max(r['updates'], 1):4.1f} ms per update, "
                          f"clock at {r['t'] * 1000:,.0f} ms, playing={r['playing']})  {verdict}",
                          flush=True)
            finally:
                browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
