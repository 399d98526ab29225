"""Playback frame rate of the in-browser player in headless Chromium (issue 3: >= 30 fps).

Frame rate is not a duration, so this is its own script rather than a `cases()` suite:

    python -m benchmarks.player_bench [--seconds 3]

It builds a realistic two-lane chart from real `sim` runs (the seed scenario: ~257 iterations per
lane, 8 token streams per lane), plays it in Debian's Chromium for a few seconds and prints how many
animation frames actually updated the Vega view per second (target >= 30), plus the page sizes of
both script designs (inline bundle vs static file) and how long each takes to draw the chart.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from charts.player import player_html, static_bundle_page, vega_bundle, vega_bundle_name
from sim.cost import CostModel
from sim.engine import simulate
from sim.hardware import get_gpu
from sim.models import get_model
from sim.policies import get_policy
from sim.workloads import seed_scenario

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
STREAMS = 8   # token streams drawn per lane: the new request and 7 decoders


def _lane_frames(trace, lane: str):
    """Iteration bars (decode and prefill parts as two rows) and token ticks of one lane."""
    parts = []
    for part, low, high in (("decode", 0, trace.decode_tokens),
                            ("prefill", trace.decode_tokens, trace.decode_tokens + trace.prefill_tokens)):
        parts.append(pd.DataFrame({
            "lane": lane, "iteration": np.arange(trace.iterations), "part": part,
            "start_s": trace.start_s, "end_s": trace.end_s, "low": low, "high": high,
            "bound": trace.bound}))
    bars = pd.concat(parts, ignore_index=True)
    new_request = len(trace.arrival_s) - 1
    shown = [new_request, *range(min(STREAMS - 1, new_request))]
    ticks = pd.concat([pd.DataFrame({"lane": lane, "request": f"r{r}", "time_s": trace.tokens_of(r)})
                       for r in shown], ignore_index=True)
    return bars, ticks


def lanes_chart(clock: str = "t", **scenario) -> tuple[dict, float, list[float]]:
    """A Vega-Lite spec shaped like the Side by side page (vllm-v0 above, sarathi below, one time
    axis, bars and ticks revealed up to the clock), with its t_max and iteration-end boundaries."""
    cost = CostModel(get_gpu("illustrative"), get_model("dense-8b"))
    workload = seed_scenario(**scenario)
    traces = {lane: simulate(workload, get_policy(lane), cost, budget=576)
              for lane in ("vllm-v0", "sarathi")}
    t_max = max(float(tr.end_s[-1]) for tr in traces.values())
    time_axis = alt.Scale(domain=[0, t_max])
    t = alt.param(name=clock, value=0)
    rows = []
    for lane, trace in traces.items():
        bars, ticks = _lane_frames(trace, lane)
        bar_chart = alt.Chart(bars, title=lane, height=140, width=900).mark_rect().encode(
            x=alt.X("start_s:Q", scale=time_axis, title="time (s)"), x2="end_s",
            y=alt.Y("low:Q", title="tokens"), y2="high", color=alt.Color("part:N"),
            tooltip=["iteration:Q", "part:N", "low:Q", "high:Q", "bound:N"],
        ).transform_filter(alt.datum.start_s <= t)
        tick_chart = alt.Chart(ticks, height=90, width=900).mark_tick(thickness=1).encode(
            x=alt.X("time_s:Q", scale=time_axis, title="time (s)"), y=alt.Y("request:N"),
        ).transform_filter(alt.datum.time_s <= t)
        rows += [bar_chart, tick_chart]
    playhead = alt.Chart(pd.DataFrame({"x": [0]})).mark_rule(color="red").transform_calculate(
        x=f"{clock}").encode(x=alt.X("x:Q", scale=time_axis))
    spec = alt.vconcat(*[alt.layer(row, playhead) for row in rows]).add_params(t).to_dict()
    boundaries = sorted({float(e) for tr in traces.values() for e in tr.end_s})
    return spec, t_max, boundaries


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
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} not found: install Debian's chromium to run this benchmark")
        return 1
    from playwright.sync_api import sync_playwright

    spec, t_max, boundaries = lanes_chart()
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
