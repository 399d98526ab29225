"""charts: frames from traces, every figure compiled by vl-convert, data size, exports."""

import io
import json
import re

import numpy as np
import pytest
import vl_convert as vlc
from PIL import Image

from charts import export
from charts.figure import stacked
from charts.frames import (
    MAX_BARS,
    bar_groups,
    callouts_frame,
    iterations_frame,
    representative_streams,
    streams_frame,
)
from charts.theme import Look
from charts.timeline import OTHER
from charts.views import budget_plan, roofline_figures, timeline
from sim.cost.iteration import CostModel
from sim.errors import InputError
from sim.presets.hardware import get_gpu
from sim.presets.models import get_model
from sim.serving.engine import simulate
from sim.serving.metrics import seed_metrics
from sim.serving.policies import Limits, get_policy
from sim.serving.workloads import poisson
from ui.scenario import scenario_from

LOOKS = [Look(), Look(presenter=True), Look(dark=True), Look(presenter=True, dark=True)]
MAX_PAGE_DATA = 1_000_000   # bytes of chart data per page (issue 3)


def run(scenario, policy):
    return simulate(scenario.workload(), get_policy(policy), scenario.cost_model(),
                    budget=scenario.budget, limits=Limits(max_seqs=scenario.max_seqs))


@pytest.fixture(scope="module")
def seed():
    s = scenario_from({})
    return s, run(s, "vllm-v0"), run(s, "sarathi")


@pytest.fixture(scope="module")
def long_run():
    """Thousands of iterations: a 1,000,000-token prompt beside 1,024 decoders (fits on an
    MI300X with Qwen2.5-7B's 56 KiB/token KV), budget 1,536."""
    s = scenario_from({"gpu": "mi300x", "model": "qwen2.5-7b", "prompt": 1_000_000,
                       "decodes": 1024, "context": 100, "budget": 1536})
    return s, run(s, "vllm-v0"), run(s, "sarathi")


# --- frames ----------------------------------------------------------------------------------
def test_iterations_frame_keeps_every_token_and_time(seed, long_run):
    for _, *traces in (seed, long_run):
        for trace in traces:
            frame = iterations_frame(trace, "lane")
            assert frame.decode_tokens.sum() == trace.decode_tokens.sum()
            assert frame.prefill_tokens.sum() == trace.prefill_tokens.sum()
            assert frame.iterations.sum() == trace.iterations
            assert frame.compute_ms.sum() == pytest.approx(trace.compute_s.sum() * 1e3)
            assert len(frame) <= 3 * MAX_BARS


def test_short_runs_get_one_bar_per_iteration(seed):
    _, unchunked, _ = seed
    frame = iterations_frame(unchunked, "lane")
    assert len(frame) == unchunked.iterations
    prefill = frame[frame.prefill_tokens > 0]
    assert list(prefill.prefill_tokens) == [8192]
    assert prefill.duration_ms.iloc[0] == pytest.approx(327.68)
    assert prefill.bound.iloc[0] == "compute"


def test_thinning_never_merges_a_long_iteration():
    start = np.r_[np.arange(1000) * 1.0, 1000.0, np.arange(1000) + 1500.0]
    end = np.r_[np.arange(1000) + 1.0, 1500.0, np.arange(1000) + 1501.0]
    groups = bar_groups(start, end, max_bars=100)
    long = 1000
    assert np.sum(groups == groups[long]) == 1
    assert groups.max() + 1 <= 3 * 100
    assert np.all(np.diff(groups) >= 0)


def test_streams_show_the_worst_decoder_and_the_new_request(seed):
    _, unchunked, chunked = seed
    for trace in (unchunked, chunked):
        picks = representative_streams(trace)
        assert "new request" in picks and picks["new request"] == 64
        streams = streams_frame(trace, "lane")
        decoders = streams[streams.role == "decoder"]
        # the largest gap among the shown decoders is the largest any decoder saw
        assert decoders.gap_ms.max() == pytest.approx(seed_metrics(trace)["decode_max_gap_s"] * 1e3)
        assert len(streams[streams.stream == "new request"]) == 32


def test_callouts_mark_the_gap_and_the_ttft(seed):
    _, unchunked, chunked = seed
    for trace, gap, ttft in ((unchunked, "333", "327.7"), (chunked, "23.04", "368.6")):
        callouts = callouts_frame(trace, "lane", streams_frame(trace, "lane"))
        labels = " | ".join(callouts.label)
        assert f"largest gap {gap} ms" in labels and f"TTFT {ttft} ms" in labels


# --- figures compile -------------------------------------------------------------------------
def _figures(scenario, unchunked, chunked, look):
    tl = timeline(unchunked, chunked)
    cost = scenario.cost_model()
    plan = budget_plan(cost, scenario.decodes, scenario.context, scenario.prompt, scenario.budget,
                       0.025)
    roof, curve = roofline_figures(cost, plan, scenario.decodes, scenario.context,
                                   scenario.prompt, look)
    return {"side-by-side": tl.figure(look), "streams": tl.figure(look, streams=True),
            "roofline": roof, "curve": curve, "roofline+curve": stacked(roof, curve)}


@pytest.mark.parametrize("look", LOOKS, ids=lambda look: f"presenter={look.presenter},dark={look.dark}")
def test_every_figure_compiles_with_vl_convert(seed, look):
    for name, figure in _figures(*seed, look).items():
        figure.chart.to_dict(validate=True)          # Altair's schema check
        svg = vlc.vegalite_to_svg(figure.spec())     # Vega-Lite compile + Vega render
        assert svg.startswith("<svg") and len(svg) > 5000, name


def test_figures_compile_for_a_long_run_and_keep_page_data_small(long_run):
    chunked = long_run[2]
    assert len(iterations_frame(chunked, "lane")) < chunked.iterations   # thinned for display
    figures = _figures(*long_run, Look())
    vega = vlc.vegalite_to_vega(figures["side-by-side"].spec())
    assert any(d.get("name") == "unchunked_iterations" for d in vega["data"])
    for name in ("side-by-side", "roofline", "curve"):
        assert len(json.dumps(figures[name].spec())) < MAX_PAGE_DATA, name


def test_default_page_data_is_under_a_megabyte(seed):
    figures = _figures(*seed, Look())
    assert len(json.dumps(figures["side-by-side"].spec())) < MAX_PAGE_DATA
    assert len(json.dumps(figures["roofline"].spec()) + json.dumps(figures["curve"].spec())) \
        < MAX_PAGE_DATA


def test_timeline_window_is_the_prompt_or_the_whole_run(seed):
    _, unchunked, chunked = seed
    whole = timeline(unchunked, chunked, "run")
    assert whole.t_max == pytest.approx(max(unchunked.end_s[-1], chunked.end_s[-1]))
    focus = timeline(unchunked, chunked, "prompt")
    assert focus.t_max == pytest.approx(1.5 * 0.36864)     # 1.5 x the chunked lane's first token
    for lane in focus.lanes:
        assert lane.streams.time_ms.max() <= focus.t_max * 1e3
        assert lane.iterations.start_ms.max() < focus.t_max * 1e3
        assert set(lane.callouts.label.str.split().str[0]) == {"largest", "TTFT"}
    assert len(focus.lanes[1].iterations) < len(whole.lanes[1].iterations)
    assert focus.boundaries[-1] == focus.t_max and max(focus.boundaries) == focus.t_max
    with pytest.raises(InputError, match="window"):
        timeline(unchunked, chunked, "zoom")


def test_timeline_clock_is_a_top_level_param_in_seconds(seed):
    _, unchunked, chunked = seed
    tl = timeline(unchunked, chunked, "run")
    assert tl.t_max == pytest.approx(unchunked.end_s[-1])
    assert tl.boundaries[0] == 0.0 and tl.boundaries[-1] == pytest.approx(tl.t_max)
    spec = tl.figure(Look()).spec()
    assert spec["params"] == [{"name": "t", "value": tl.t_max}]
    assert tl.figure(Look()).spec(t=0.1)["params"] == [{"name": "t", "value": 0.1}]


def test_clock_changes_what_is_drawn(seed):
    figure = timeline(*seed[1:]).figure(Look())
    early = vlc.vegalite_to_svg(figure.spec(t=0.05))
    late = vlc.vegalite_to_svg(figure.spec())
    assert early != late
    # the largest-gap callout appears only once its gap has ended (333 ms in the unchunked lane)
    assert "largest gap 333 ms" not in early and "largest gap 333 ms" in late


@pytest.mark.parametrize("values, beyond_ms", [
    ({}, 0.0),                                               # seed 001: time = max, nothing added
    ({"gpu": "h100-sxm", "mode": "calibrated", "tp": 2}, 4.0),  # at least the 4 ms overhead
])
def test_bar_tooltips_show_the_time_beyond_max_compute_memory(values, beyond_ms):
    s = scenario_from(values)
    svg = vlc.vegalite_to_svg(timeline(run(s, "vllm-v0"), run(s, "sarathi")).figure(Look()).spec())
    tips = [dict(field.split(": ", 1) for field in label.split("; "))   # the tooltip's fields
            for label in re.findall(r'aria-label="([^"]*iterations in this bar[^"]*)"', svg)]
    assert tips

    def ms(tip, title):
        return float(tip[title].replace(",", ""))

    for tip in tips:
        longer = max(ms(tip, "compute time (ms)"), ms(tip, "memory time (ms)"))
        assert ms(tip, OTHER) == pytest.approx(ms(tip, "duration (ms)") - longer, abs=2e-3)
        assert ms(tip, OTHER) >= beyond_ms if beyond_ms else ms(tip, OTHER) == 0


def test_downloads_carry_the_figures_data(seed):
    figure = timeline(*seed[1:]).figure(Look())
    csv = figure.csv()
    assert csv.splitlines()[0].startswith("lane,") and "unchunked_iterations" in csv
    data = json.loads(figure.json())
    assert set(data) == {"unchunked_iterations", "unchunked_streams", "unchunked_callouts",
                         "chunked_iterations", "chunked_streams", "chunked_callouts"}
    assert data["unchunked_streams"][0]["gap_ms"] is None   # NaN -> null, JSON has no NaN


# --- export ----------------------------------------------------------------------------------
def test_png_svg_and_gif_exports(seed):
    tl = timeline(*seed[1:])
    figure = tl.figure(Look(), width=400)
    png = Image.open(io.BytesIO(export.png(figure)))
    assert png.format == "PNG" and png.width > 800          # scale 2 for docs
    assert export.svg(figure).startswith("<svg")
    gif = Image.open(io.BytesIO(export.gif(figure, tl.t_max, frames=3)))
    assert gif.format == "GIF" and gif.n_frames == 3


def test_a_window_cut_keeps_each_bars_longest_iteration_inside_it():
    """`longest_ms` of the last shown bar must not reach for iterations after the cut."""
    trace = simulate(poisson(50, 20, seed=1), get_policy("vllm-v0"),
                     CostModel(get_gpu("illustrative"), get_model("dense-8b"), "simple"), budget=512)
    until_s = float(trace.end_s[3])
    shown = iterations_frame(trace, "lane", until_s=until_s)
    n = int(np.searchsorted(trace.start_s, until_s))
    assert len(shown) == n
    np.testing.assert_allclose(shown.longest_ms, trace.duration_s[:n] * 1e3)
    assert trace.duration_s[n:].max() > trace.duration_s[:n].max()   # the cut hides a longer one
